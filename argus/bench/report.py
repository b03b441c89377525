"""The benchmark's report: a Markdown document (tables of times and ratios) and a plot
of cycle time against the number of queries and against the batch size."""

from __future__ import annotations

import platform
import statistics
from collections import defaultdict
from pathlib import Path

from .runner import Results


def _x(base: float | None, argus: float) -> str:
    return "" if base is None else f"{base / argus:,.1f}×" if argus > 0 else "∞"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def hardware() -> str:
    cpus = "?"
    try:
        import os
        cpus = str(os.cpu_count())
    except Exception:  # pragma: no cover
        pass
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kb = int(meminfo.read_text().split()[1])
        memory = f", {kb / 1024 / 1024:.0f} GiB"
    return f"{platform.machine()}, {cpus} CPUs{memory}, {platform.system()} {platform.release()}"


def markdown(results: Results, title: str) -> str:
    out = [f"# {title}", "",
           f"{results.server} on {hardware()}. Milliseconds per batch (median), from the "
           "batch's arrival to current answers, each method paying its own ingest: argus "
           "= COPY into the inbox + one cycle + every query's changes read (what a consumer "
           "of each answer takes); re-run = COPY into a plain table + every "
           "query re-run into a table; REFRESH MV = COPY + one materialized view per query "
           "refreshed; pg_ivm = COPY into tables with one IMMV per query it accepts "
           "(maintained inside the insert); floor = the COPY alone. A ratio is how many "
           "times argus is faster. argus takes each batch size's batches back to back in one "
           "session; the other methods then take the same batches over their own copies "
           "of the streams. A CHECKPOINT (untimed) precedes argus's batches and each other "
           "method's turn at a batch, so that none pays for writing out another's pages. "
           "Steady state, as `argus run --follow` runs cycles: the first cycle of a session "
           "also compiles the network's program, and is not timed (a cycle run from cron "
           "is its session's first: docs/performance.md). WAL per batch: bytes of "
           "write-ahead log the server wrote (the median batch), argus's load and cycle "
           "against the COPY alone (each stream row logged once: what a durable store of "
           "the rows must write).", ""]
    if results.data:
        out += ["Data: " + "; ".join(results.data) + ".", ""]
    out += [f"> {n}" for n in results.notices]
    if results.notices:
        out.append("")
    out += ["| workload | queries | batch | argus | re-run | REFRESH MV | pg_ivm | floor | "
            "nodes | argus state / base data | registration ms/query | WAL per batch: "
            "argus / floor |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in results.measures:
        ivm = (f"{_ms(m.pg_ivm)} ({_x(m.pg_ivm, m.argus)}, {m.ivm_queries} queries)"
               if m.pg_ivm is not None else "—")
        out.append(
            f"| {m.workload} | {m.queries:,} | {m.batch:,} | {_ms(m.argus)} | "
            f"{_ms(m.rerun)} ({_x(m.rerun, m.argus)}) | {_ms(m.matview)} "
            f"({_x(m.matview, m.argus)}) | {ivm} | {_ms(m.floor)} | {m.nodes:,} | "
            f"{m.state_bytes / 2**20:,.1f} / {m.base_bytes / 2**20:,.1f} MiB | "
            f"{m.register_ms:,.1f} | {m.wal / 2**20:,.2f} / {m.floor_wal / 2**20:,.2f} MiB |")
    out += _checked([m for m in results.measures if m.equal is not None])
    if any(m.breakdown for m in results.measures):
        out += _breakdown(results.measures)
    if results.per_query:
        out += _per_query(results.per_query)
    if results.registrations:
        out += _registrations(results.registrations)
    return "\n".join(out) + "\n"


def _checked(checked) -> list[str]:
    """Whether each workload's answers equal the re-run's, and what its audit flagged."""
    out = [""] + [f"Answers of all {m.queries:,} {m.workload} queries equal to the re-run "
                  f"ones after the last batch: {'yes' if m.equal else 'NO'}." for m in checked]
    for m in checked:
        if m.audit is None:
            out.append(f"No node audit of the {m.workload} network (it needs a superuser).")
            continue
        out.append(f"Node audit of the {m.workload} network (`argus explain --audit`: a "
                   "statement flagged reads more than 10 times its delta where probing an "
                   "index is twice as fast), statements flagged: "
                   + ", ".join(f"{len(found)} with {size:,} new rows"
                               for size, found in m.audit.items()) + ".")
        out += [f"- {size:,} rows: {line}" for size, found in m.audit.items() for line in found]
    return out


def _registrations(registrations) -> list[str]:
    out = ["", "## Registration", "", "| workload | query number | ms |", "|---|---:|---:|"]
    by: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for w, n, ms in registrations:
        by[w].append((n, ms))
    for w, rows in by.items():
        for mark in sorted({n for n, _ in rows if n in (1, 10, 100, 250, 500, 1000)}
                           | {rows[-1][0]}):
            window = [ms for n, ms in rows if mark - 10 < n <= mark]
            out.append(f"| {w} | {mark:,} | {sum(window) / len(window):,.1f} |")
    out.append("\n(mean of the registrations up to ten before each number)")
    return out


def _per_query(per_query) -> list[str]:
    out = ["", "## Each query alone against re-running it (and pg_ivm maintaining it)", "",
           "Re-run = COPY into plain tables + the query re-run into a persistent table; "
           "re-run (temp) = the same into a new temporary table (no WAL). argus re-run = "
           "the query evaluated by argus by re-running it (`argus optimize --evaluate "
           "rerun`), on the next batches of the size (—: not measured, re-running it is "
           "more than 3× slower than argus at every size).", "",
           "| workload | query | batch | argus | re-run | re-run (temp) | pg_ivm "
           "| argus re-run |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for p in per_query:
        ivm = f"{_ms(p.pg_ivm)} ({_x(p.pg_ivm, p.argus)})" if p.pg_ivm is not None else "—"
        again = "—" if p.argus_rerun is None else _ms(p.argus_rerun)
        out.append(f"| {p.workload} | {p.query} | {p.batch:,} | {_ms(p.argus)} | "
                   f"{_ms(p.rerun)} ({_x(p.rerun, p.argus)}) | "
                   f"{_ms(p.rerun_temp)} ({_x(p.rerun_temp, p.argus)}) | {ivm} | {again} |")
    slower = [p for p in per_query if p.closest < 1]
    either = [p for p in slower if p.argus_rerun is None
              or min(p.rerun, p.rerun_temp or p.rerun) < p.argus_rerun]
    out += ["", f"argus slower than the cheaper re-run in {len(slower)} of {len(per_query)} "
            f"cases; evaluated the cheaper of its two ways (incremental, argus re-run), in "
            f"{len(either)}. The five closest, and where argus's time goes (ms: load, claim and "
            "stream histories, the cycle's bookkeeping, the query's own nodes):", "",
            "| workload | query | batch | ratio | argus | load | claim | bookkeeping "
            "| nodes |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in sorted(per_query, key=lambda p: p.closest)[:5]:
        nodes = p.argus - p.load - p.claim - p.bookkeeping
        out.append(f"| {p.workload} | {p.query} | {p.batch:,} | {p.closest:.2f}× | "
                   f"{_ms(p.argus)} | {_ms(p.load)} | {_ms(p.claim)} | "
                   f"{_ms(p.bookkeeping)} | {_ms(max(nodes, 0))} |")
    out += ["", "## argus's fixed cost per batch, next to the floor", "",
            "Median over the queries measured alone, ms per batch: the load (`db.insert`) "
            "next to a bare COPY of the same rows, the claim and stream history appends, "
            "and the cycle's own bookkeeping (its time less every node's: locking, "
            "clearing the last deltas, logging, the report, the commit).", "",
            "| workload | batch | COPY (floor) | load | load / floor | claim + histories "
            "| bookkeeping |", "|---|---:|---:|---:|---:|---:|---:|"]
    groups: dict[tuple[str, int], list] = defaultdict(list)
    for p in per_query:
        groups[(p.workload, p.batch)].append(p)
    for (w, batch), ps in groups.items():
        floor, load, claim, books = (statistics.median(getattr(p, a) for p in ps)
                                     for a in ("floor", "load", "claim", "bookkeeping"))
        out.append(f"| {w} | {batch:,} | {_ms(floor)} | {_ms(load)} | {load / floor:.2f} | "
                   f"{_ms(claim)} | {_ms(books)} |")
    return out


KINDS = ("stream", "select", "join", "aggregate", "distinct", "setop")  # first, in this order


def _breakdown(measures) -> list[str]:
    """Where an argus cycle's time goes, at each workload's largest query count."""
    shown = [m for w in sorted({m.workload for m in measures})
             for m in measures if m.workload == w and m.breakdown
             and m.queries == max(x.queries for x in measures if x.workload == w)]
    found = {kind for m in shown for kind in m.breakdown if kind != "cycle"}
    kinds = [k for k in KINDS if k in found] + sorted(found - set(KINDS))
    out = ["", "## Where an argus cycle's time goes",
           "", "Milliseconds per cycle on the server, summed over the nodes of each kind: "
           "evaluating (filling the deltas) / maintaining the histories (stream: claiming "
           "the inboxes / appending to the stream histories); the rest is the cycle's own "
           "bookkeeping (clearing the last deltas, choosing, logging). From the per-node "
           "timings every cycle records (`argus_catalog.run_nodes`).", "",
           "| workload | queries | batch | cycle | " + " | ".join(kinds) + " | rest |",
           "|---|---:|---:|---:|" + "---:|" * (len(kinds) + 1)]
    for m in shown:
        cycle = m.breakdown.get("cycle", (0.0, 0.0))[0]
        cells, spent = [], 0.0
        for kind in kinds:
            ev, mt = m.breakdown.get(kind, (0.0, 0.0))
            spent += ev + mt
            cells.append(f"{ev:,.1f} / {mt:,.1f}" if ev or mt else "—")
        out.append(f"| {m.workload} | {m.queries:,} | {m.batch:,} | {cycle:,.1f} | "
                   + " | ".join(cells) + f" | {max(cycle - spent, 0):,.1f} |")
    return out


def plot(results: Results, path: Path) -> bool:
    """Per workload: cycle time against the number of queries and against the batch
    size (or, with one of each, each query alone against its alternatives); False
    without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    workloads = sorted({m.workload for m in results.measures})
    fig, axes = plt.subplots(len(workloads), 2, figsize=(12, 4.2 * len(workloads)),
                             squeeze=False)
    for row, w in zip(axes, workloads):
        ms = [m for m in results.measures if m.workload == w]
        sizes = sorted({m.batch for m in ms})
        counts = sorted({m.queries for m in ms})
        if len(sizes) > 1 or len(counts) > 1:
            _lines(row[0], [m for m in ms if m.batch == sizes[len(sizes) // 2]], "queries",
                   f"{w}: batches of {sizes[len(sizes) // 2]:,}")
            _lines(row[1], [m for m in ms if m.queries == counts[-1]], "batch",
                   f"{w}: {counts[-1]:,} queries")
        else:
            _bars(row[0], [p for p in results.per_query if p.workload == w],
                  f"{w}: each query alone, batches of {sizes[0]:,}")
            _lines(row[1], ms, "queries", f"{w}: all {counts[0]:,} queries together",
                   bars=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


METHODS = (("argus", "argus"), ("rerun", "re-run"), ("matview", "REFRESH MV"),
           ("pg_ivm", "pg_ivm"), ("floor", "floor (COPY)"))


def _lines(ax, ms, by: str, title: str, bars: bool = False) -> None:
    if bars:
        values = [(label, getattr(ms[0], attr)) for attr, label in METHODS
                  if getattr(ms[0], attr) is not None]
        ax.bar([v[0] for v in values], [v[1] for v in values],
               color=[f"C{i}" for i in range(len(values))])
    else:
        for attr, label in METHODS:
            points = sorted((getattr(m, by), getattr(m, attr)) for m in ms
                            if getattr(m, attr) is not None)
            if points:
                ax.plot(*zip(*points), marker="o", label=label)
        ax.set_xlabel("queries" if by == "queries" else "batch size (rows)")
        if by == "batch":
            ax.set_xscale("log")
        ax.legend(fontsize=8)
    ax.set(title=title, ylabel="ms per batch", yscale="log")
    ax.grid(True, which="both", alpha=0.3)


def _bars(ax, per_query, title: str) -> None:
    if not per_query:  # --per-query 0
        ax.axis("off")
        ax.text(0.5, 0.5, "each query alone: not measured", ha="center", va="center")
        return
    names = [p.query for p in per_query]
    width = 0.28
    for i, (attr, label) in enumerate((("argus", "argus"), ("rerun", "re-run"),
                                       ("pg_ivm", "pg_ivm"))):
        values = [getattr(p, attr) or 0 for p in per_query]
        if not any(values):
            continue  # pg_ivm not installed, or it refused every query
        ax.bar([k + (i - 1) * width for k in range(len(names))], values, width, label=label,
               color=f"C{(0, 1, 3)[i]}")
    ax.set_xticks(range(len(names)), [n.split("_")[-1] for n in names], rotation=60,
                  fontsize=7)
    ax.set(title=title, ylabel="ms per batch", yscale="log")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
