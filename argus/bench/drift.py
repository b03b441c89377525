"""`argus bench --workload drift`: a layout chosen at registration against the data
drifting away from it, static and adaptive (argus.adapt, issue 21), on the same rows.

Three streams r, s, t (id, k1, k2, v) and a family of 3-way chain queries
`r ⋈ s ON r.k1 = s.k1 ⋈ t ON s.k2 = t.k2`, each with its own filters on r and t. At
registration r's filters pass 1% of its rows and t's all: each query's cheapest tree
is (r ⋈ s) ⋈ t. A third of the way in, r's filters pass all and t's 1% (the most
selective input became unselective), and s's rate doubles; two thirds in, back. Each
phase's rows have join keys of their own. The
static network keeps its layout (reoptimize_every null); the adaptive ones re-plan
every `every` cycles and migrate, one by Moving State (the new joins built in the
pause), one by JISC (the new joins completed key by key by the cycles after). Per
cycle: its time including any migration after it (the delay of the next batch's
answers), the migrations' share of it, and the network's state.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from psycopg import sql

import argus
from argus.names import results_view
from argus.network import network_bytes

from .runner import fresh_database

COLUMNS = {"id": "bigint", "k1": "int", "k2": "int", "v": "int"}
# query q's filters: v under 1000 but for q, so that no query's filter subsumes
# another's and each keeps its own joins (a shared join is not migrated)
CHAIN = ("SELECT r.id AS r_id, s.id AS s_id, t.id AS t_id FROM r JOIN s ON r.k1 = s.k1 "
         "JOIN t ON s.k2 = t.k2 WHERE r.v < 1000 AND r.v <> {q} AND t.v < 1000 AND t.v <> {q}")


@dataclass
class Series:
    mode: str
    ms: list[float] = field(default_factory=list)  # cycle + migrations after it
    pause: list[float] = field(default_factory=list)  # of which migrations (build ms)
    mib: list[float] = field(default_factory=list)
    migrated: list[int] = field(default_factory=list)  # cycles after which it migrated
    decisions: list = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)  # query -> digest at the end
    query_ms: list[dict[str, float]] = field(default_factory=list)  # its nodes' ms, by cycle


class Drift:
    """The rows, the same for every mode: phases of (r's share passing, t's share
    passing, s's rate)."""

    def __init__(self, cycles: int, batch: int, keys: int, seed: int = 1) -> None:
        self.cycles, self.batch, self.keys, self.seed = cycles, batch, keys, seed

    def phase(self, cycle: int) -> int:
        return min(max(cycle, 0) * 3 // self.cycles, 2)

    def rows(self, rng: random.Random, start: int, n: int, passing: float, phase: int
             ) -> list[tuple]:
        """v under 1000 passes every query's filter with probability `passing`; the
        join keys of each phase are its own (new rows meet the phase's rows), so that
        the answers stay small and what changes is the size of the intermediate
        joins."""
        base = phase * self.keys
        return [(start + i, base + rng.randrange(self.keys), base + rng.randrange(self.keys),
                 rng.randrange(1000) if rng.random() < passing else 1000 + rng.randrange(1000))
                for i in range(n)]

    def batches(self):
        rng = random.Random(self.seed)
        next_id = 0
        for cycle in range(-10, self.cycles):  # ten batches of history first
            phase = self.phase(cycle)
            drifted = phase == 1
            out = {}
            for stream, passing, rate in (("r", 1.0 if drifted else 0.01, 1),
                                          ("s", 1.0, 2 if drifted else 1),
                                          ("t", 0.01 if drifted else 1.0, 1)):
                n = self.batch * rate
                out[stream] = self.rows(rng, next_id, n, passing, phase)
                next_id += n
            yield cycle, out


def measure(dsn: str | None, drift: Drift, queries: int, every: int | None, log,
            strategy: str = "moving-state") -> Series:
    series = Series("static" if every is None else f"adaptive, {strategy}")
    db = argus.connect(fresh_database(dsn))
    try:
        # the join order's re-plan alone: re-running a query instead is another story
        db.configure(reoptimize_every=None, rerun_fallback=False, migration=strategy)
        for stream in ("r", "s", "t"):
            db.create_stream(stream, COLUMNS)
        for cycle, rows in drift.batches():
            for stream, batch in rows.items():
                db.insert(stream, batch)
            if cycle == -1:
                db.run()
                db.conn.execute("VACUUM ANALYZE")
                for q in range(queries):
                    db.register_query(f"chain_{q}", CHAIN.format(q=q))
                db.configure(reoptimize_every=every)
                continue
            if cycle < 0:
                db.run()
                continue
            started = time.perf_counter()
            report = db.run()
            series.ms.append((time.perf_counter() - started) * 1000)
            series.mib.append(network_bytes(db.conn) / 2**20)
            series.pause.append(sum(d.build_ms or 0.0 for d in report.migrations
                                    if d.migrated))
            if any(d.migrated for d in report.migrations):
                series.migrated.append(cycle)
            series.decisions += [(cycle, d) for d in report.migrations]
            series.query_ms.append(dict(db.conn.execute(
                """SELECT q.name, sum(n.ms + coalesce(n.flush_ms, 0))
                     FROM argus_catalog.run_nodes n
                     JOIN argus_catalog.query_nodes qn USING (node_id)
                     JOIN argus_catalog.queries q USING (query_id)
                    WHERE n.run_id = %s GROUP BY q.name""", (report.run_id,))))
            if cycle % 10 == 0:
                log(f"drift, {series.mode}: cycle {cycle}, {series.ms[-1]:,.1f} ms")
        for q in range(queries):
            (series.answers[f"chain_{q}"],) = db.conn.execute(sql.SQL(
                "SELECT md5(string_agg(a::text, ',' ORDER BY a::text)) FROM {} AS a").format(
                    results_view(f"chain_{q}"))).fetchone()
        return series
    finally:
        db.close()


def report(drift: Drift, queries: int, runs: list[Series]) -> str:
    third = drift.cycles // 3
    spans = (("before the drift", 0, third), ("after the drift", third, 2 * third),
             ("back", 2 * third, drift.cycles))
    lines = [
        "# argus bench: drift",
        "",
        f"{queries} three-way chain queries over streams r, s, t; batches of {drift.batch:,} "
        f"rows per stream (s: twice that after the drift), {drift.keys:,} join keys, "
        f"{drift.cycles} cycles. Cycles {third}–{2 * third - 1}: r's filters pass all its "
        "rows instead of 1%, t's 1% instead of all, s's rate doubles. Milliseconds per "
        "cycle including the migrations that follow it (the next batch waits for them); "
        "medians over each span, and its slowest cycle.",
        "",
        "| layout | span | median ms | max ms | state MiB (end) | migrations |",
        "|---|---|---:|---:|---:|---:|"]
    for s in runs:
        for label, lo, hi in spans:
            ms = s.ms[lo:hi]
            moved = sum(1 for c in s.migrated if lo <= c < hi)
            lines.append(f"| {s.mode} | {label} | {statistics.median(ms):,.1f} | "
                         f"{max(ms):,.1f} | {s.mib[hi - 1]:,.1f} | {moved} |")
    static = runs[0]
    lo, hi = third + drift.cycles // 6, 2 * third  # after the drift, once migrated
    lines.append("")
    for adaptive in runs[1:]:
        ratio = statistics.median(static.ms[lo:hi]) / statistics.median(adaptive.ms[lo:hi])
        same = static.answers == adaptive.answers
        lines.append(f"After the drift (cycles {lo}–{hi - 1}), {adaptive.mode} is "
                     f"{ratio:,.1f}× faster per cycle than the static layout. Answers of "
                     f"both after the last cycle equal: {'yes' if same else 'NO'}.")
    lines += ["", "The price of migrating: the pause (the migrations' build, the next "
              "batch waiting for it) and the cycles after a migration, without the pause, "
              "against a normal cycle of the same span (its median over the cycles five "
              "or more after a migration).", "",
              "| strategy | migrations | pause ms: total | max | 3 cycles after, "
              "× normal (worst) |", "|---|---:|---:|---:|---:|"]
    for adaptive in runs[1:]:
        lines.append(f"| {adaptive.mode} | {len(adaptive.migrated)} | "
                     f"{sum(adaptive.pause):,.0f} | {max(adaptive.pause, default=0):,.0f} | "
                     f"{_after_migrations(drift, adaptive)} |")
    return "\n".join(lines + _migrations(static, runs[1])) + "\n"


def _migrations(static: Series, adaptive: Series) -> list[str]:
    """Each migration's predicted and measured gain."""
    moved = [(c, d) for c, d in adaptive.decisions if d.migrated]
    if not moved:
        return []
    lines = ["", "Migrations. Predicted: the optimizer's row operations per cycle of "
             "the layout it had and of the new one. Measured: the time per cycle of the "
             "query's nodes in the adaptive network over the (up to) 5 cycles before the "
             "migration and the 10 after it — what the prediction compares — and in the "
             "static network over the same 10 cycles, on the same rows.", "",
             "| after cycle | query | trees | predicted | measured ms: before → after "
             "| static, after | build ms |", "|---:|---|---|---:|---:|---:|---:|"]
    for cycle, d in moved:
        p = d.prediction
        trees = "; ".join(f"{a} → {b}" for a, b in p.trees)
        before = range(max(cycle - 4, 0), cycle + 1)
        after = range(cycle + 1, min(cycle + 11, len(adaptive.query_ms)))
        lines.append(f"| {cycle} | {d.query} | {trees} | {p.current or 0:,.0f} → "
                     f"{p.best:,.0f} | {_query_ms(adaptive, d.query, before)} → "
                     f"{_query_ms(adaptive, d.query, after)} | "
                     f"{_query_ms(static, d.query, after)} | {d.build_ms or 0:,.0f} |")
    return lines


def _query_ms(s: Series, query: str, cycles: range) -> str:
    """The mean ms a cycle of the query's nodes over these cycles."""
    return "—" if not cycles else \
        f"{statistics.mean(s.query_ms[c].get(query, 0.0) for c in cycles):,.1f}"


def _after_migrations(drift: Drift, s: Series) -> str:
    """The worst ratio of a cycle in the 3 after a migration (pause excluded) to the
    normal cycle of its span."""
    third = drift.cycles // 3
    cycles = [m - p for m, p in zip(s.ms, s.pause)]
    worst = None
    for c in s.migrated:
        lo = c // third * third
        quiet = [cycles[i] for i in range(lo, min(lo + third, len(cycles)))
                 if all(not 0 <= i - m < 5 for m in s.migrated)]
        if not quiet:
            continue
        normal = statistics.median(quiet)
        for i in range(c + 1, min(c + 4, len(cycles))):
            worst = max(worst or 0.0, cycles[i] / normal)
    return "—" if worst is None else f"{worst:,.1f}"


def plot(drift: Drift, runs: list[Series], path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for i, s in enumerate(runs):
        top.plot(range(len(s.ms)), s.ms, label=s.mode, color=f"C{i}")
        bottom.plot(range(len(s.mib)), s.mib, label=s.mode, color=f"C{i}")
        for c in s.migrated:
            top.axvline(c, color=f"C{i}", alpha=0.25, linestyle=":")
    third = drift.cycles // 3
    for ax in (top, bottom):
        ax.axvspan(third, 2 * third, color="grey", alpha=0.1)
    top.set_ylabel("ms per cycle (+ migrations)")
    top.set_yscale("log")
    bottom.set_ylabel("network state (MiB)")
    bottom.set_xlabel("cycle (grey: drifted; dotted: migrations)")
    top.legend()
    top.set_title("drift: static layout against adaptive (Moving State, JISC)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def run(out: Path, dsn: str | None = None, *, cycles: int = 60, batch: int = 500,
        keys: int = 500, queries: int = 4, every: int = 5, log=print) -> str:
    drift = Drift(cycles, batch, keys)
    runs = [measure(dsn, drift, queries, None, log),
            *(measure(dsn, drift, queries, every, log, strategy)
              for strategy in ("moving-state", "jisc"))]
    out.mkdir(parents=True, exist_ok=True)
    text = report(drift, queries, runs)
    (out / "drift.md").write_text(text)
    plot(drift, runs, out / "drift.png")
    return text
