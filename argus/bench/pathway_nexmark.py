"""argus against Pathway (the Python stream processor) on the same Nexmark events and the
Nexmark queries both maintain: ms per batch from the batch's arrival to current answers.

Why: argus keeps answers current with incremental SQL inside PostgreSQL; Pathway is an
incremental dataflow engine (differential dataflow in Rust) driven from Python. Both get
H events of history, then N batches of B events (argus.bench.nexmark's generator, seed 1), and
are timed per batch:
- argus: COPY of the batch into the inboxes + one cycle + every query's changes read
  (`new_results`), as `argus bench` times it;
- Pathway (its own virtualenv, run as a subprocess of this script, PATHWAY_THREADS=2):
  from pushing the batch's first event into a Python connector (one commit per batch, so
  the batch is one Pathway time) until every query's subscription (pw.io.subscribe) has
  received its changes for that time. End of batch: each subscribed table is the query's
  output concatenated with a tick row the connector sends in the batch's commit. Pathway
  calls a subscription's on_time_end(t) only for times in which its table changed, once
  the subscription's input frontier has passed t, after on_change for every change at t;
  the tick makes every subscription change at every batch, so on_time_end at the tick's
  time says that the query's output for the batch is complete and delivered.
The systems run one after the other (Pathway first), never at once. Then each query's
final answer in Pathway is compared with argus's and with its SQL run from scratch over
argus's stream histories (argus_streams), as multisets of rows; numbers with a relative
tolerance of 1e-9, since argus computes 0.908 * price and avg in numeric, Pathway in float.
The database is argus_pathway, made anew and dropped at the end. Pathway's q11 (session
windows: a sort and pointer jumping in pw.iterate) costs more as the history grows and
dominates its time; --queries without q11 shows the others.

Usage: python -m argus.bench.pathway_nexmark [--dsn DSN] [--history 100000] [--batch 5000[,…]]
           [--batches 5] [--queries q0,q1,…] [--pathway-python /tmp/pwvenv/bin/python]
Pathway: python3 -m venv /tmp/pwvenv && /tmp/pwvenv/bin/pip install pathway==0.33.0
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent  # argus/bench: nexmark.py beside this file
DATABASE = "argus_pathway"
SEED = 1
CHUNK = 100_000  # history events generated at a time (Pathway commits the history once)
TIMEOUT = 3600  # seconds Pathway may take over one batch

# argus.bench.nexmark's queries that Pathway maintains here with the same answers
QUERIES = ("q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q10", "q11", "q14", "q15",
           "q16", "q17", "q18", "q20", "q21", "q22")
LEFT_OUT = {
    "q6": "the average of each seller's last 11 auctions (ROWS BETWEEN 10 PRECEDING): "
          "Pathway has no row-count windows (emulating them with sort's prev pointers "
          "chained 10 deep would be another query)",
    "q19": "the top 10 bids of each auction, numbered: Pathway has no top-k per group "
           "(sorted_tuple over each auction's every bid, sliced, re-sorts whole groups)",
    "q12, q13": "not in argus.bench.nexmark (processing-time windows; no side table)",
}


def nexmark():
    return by_path("nexmark")


def by_path(name: str):
    """argus/bench/<name>.py loaded by its path: nexmark.py and pathway_queries.py need
    only the standard library (and Pathway), while `import argus.bench.nexmark` would run
    argus/__init__ (psycopg, …), which Pathway's venv lacks."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def history(gen, events: int):
    while events > 0:
        yield gen.batch(min(events, CHUNK))
        events -= CHUNK


def plain(value):
    """A value of an answer as JSON carries it: timestamps as ISO text, numbers as numbers."""
    if hasattr(value, "to_pydatetime"):  # pandas.Timestamp, from Pathway
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


# -- Pathway's side, in Pathway's virtualenv ----------------------------------------------


def pathway_side(spec: dict, out: str) -> None:
    import pathway as pw

    model = nexmark()
    outputs = Outputs(spec["queries"])
    feeder = feeder_for(pw, model, spec, outputs)
    events = pw.io.python.read(feeder, schema=event_schema(pw, model),
                               autocommit_duration_ms=None, name="nexmark")
    streams = split(pw, model, events)
    queries = by_path("pathway_queries").pathway_queries(pw, **streams)
    for name in spec["queries"]:
        on_change, on_time_end = outputs.sink(name)
        pw.io.subscribe(ticked(pw, queries[name], streams["tick"]), on_change=on_change,
                        on_time_end=on_time_end, name=name)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    with open(out, "w") as file:
        json.dump({"version": pw.__version__, "threads": os.environ.get("PATHWAY_THREADS"),
                   "load_s": feeder.load_s, "times": feeder.times, "pushing": feeder.pushing,
                   "untimed": outputs.untimed,
                   "answers": outputs.answers()}, file)


def field_names(model) -> dict[str, list[str]]:
    """Each stream's columns in Pathway, `id` renamed (Pathway's row key): p_id, a_id."""
    return {stream: [f"{stream[0]}_id" if c == "id" else c for c in columns]
            for stream, columns in model.COLUMNS.items()}


def event_schema(pw, model):
    """One connector carries all three streams and the ticks, so that a batch is one commit,
    one Pathway time: every stream's columns (optional), `kind` and `tick`."""
    types = {"bigint": int, "text": str, "timestamp": pw.DateTimeNaive}
    columns = {"kind": pw.column_definition(dtype=str),
               "tick": pw.column_definition(dtype=int | None, default_value=None)}
    for stream, names in field_names(model).items():
        for name, sql_type in zip(names, model.COLUMNS[stream].values()):
            columns[name] = pw.column_definition(dtype=types[sql_type.split()[0]] | None,
                                                 default_value=None)
    return pw.schema_builder(columns, name="NexmarkEvent")


def split(pw, model, events) -> dict:
    """Each stream: the events of its kind, its columns unwrapped (the generator leaves
    none NULL); and the ticks."""
    out = {}
    for stream, names in field_names(model).items():
        rows = events.filter(events.kind == stream)
        out[stream] = rows.select(**{name: pw.unwrap(rows[name]) for name in names})
    ticks = events.filter(events.kind == "tick")
    out["tick"] = ticks.select(tick=pw.unwrap(ticks.tick))
    return out


def ticked(pw, table, tick):
    """`table` and one row more per batch at the batch's time: the query's rows have _tick
    -1, the tick's row the batch's number (and its other columns None)."""
    return pw.Table.concat_reindex(
        table.select(*pw.this, _tick=-1),
        tick.select(**{column: None for column in table.column_names()}, _tick=pw.this.tick))


class Outputs:
    """The queries' subscriptions: the changes, kept as they come (folded into answers after
    the run), and, per batch (tick), how many subscriptions have taken its output in full."""

    def __init__(self, names: list[str]) -> None:
        self.changes: dict[str, list] = {name: [] for name in names}
        self.complete: Counter = Counter()
        self.at: dict[int, float] = {}  # tick -> perf_counter at its last on_time_end
        self.cond = threading.Condition()
        self.untimed = 0  # times with changes but no tick (a batch over several times)

    def sink(self, name: str):
        log, ticks = self.changes[name], []

        def on_change(key, row, time, is_addition):
            tick = row.pop("_tick")
            if tick >= 0:
                ticks.append(tick)
            else:
                log.append((row, is_addition))

        def on_time_end(time):
            if not ticks:
                self.untimed += 1
                return
            with self.cond:
                for tick in ticks:
                    self.complete[tick] += 1
                    if self.complete[tick] == len(self.changes):
                        self.at[tick] = now()
                        self.cond.notify_all()
            ticks.clear()

        return on_change, on_time_end

    def wait(self, tick: int) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: tick in self.at, timeout=TIMEOUT):
                raise TimeoutError(f"Pathway: no complete output for batch {tick}")
            return self.at[tick]

    def answers(self) -> dict[str, list]:
        out = {}
        for name, log in self.changes.items():
            rows: Counter = Counter()
            for row, added in log:
                rows[tuple(plain(v) for v in row.values())] += 1 if added else -1
            out[name] = [list(row) for row, n in rows.items() for _ in range(n)]
        return out


def now() -> float:
    return time.perf_counter()


def feeder_for(pw, model, spec: dict, outputs: Outputs):
    """The connector: pushes the history, then each batch as one commit with its tick, and
    times a batch from its first event to the last subscription's on_time_end for it."""
    names = field_names(model)

    class Feeder(pw.io.python.ConnectorSubject):
        load_s = 0.0
        times: dict[str, list[float]]  # size -> ms per batch
        pushing: dict[str, list[float]]  # size -> ms of it pushing the events

        def push(self, batch: dict, tick: int | None) -> None:
            """The batch's events and, if `tick`, its tick and the commit."""
            for stream, rows in batch.items():
                columns = names[stream]
                for row in rows:
                    self.next(kind=stream, **dict(zip(columns, row)))
            if tick is not None:
                self.next(kind="tick", tick=tick)
                self.commit()

        def run(self) -> None:
            self.times, self.pushing = {}, {}
            gen = model.NexmarkGenerator(SEED)
            started = now()
            for chunk in history(gen, spec["history"]):  # one commit: tick 0
                self.push(chunk, None)
            self.push({}, 0)
            self.load_s = outputs.wait(0) - started
            tick = 0
            for size in spec["sizes"]:
                batches = [gen.batch(size) for _ in range(spec["batches"])]  # untimed
                self.times[str(size)], self.pushing[str(size)] = [], []
                for batch in batches:
                    tick += 1
                    started = now()
                    self.push(batch, tick)
                    self.pushing[str(size)].append((now() - started) * 1000)
                    self.times[str(size)].append((outputs.wait(tick) - started) * 1000)

    return Feeder()


# -- argus's side, and the report -----------------------------------------------------------


def run_pathway(args, sizes: list[int], queries: list[str]) -> tuple[dict, list[str]]:
    """Pathway's run in its virtualenv: its results, and the warnings it logged."""
    spec = {"history": args.history, "sizes": sizes, "batches": args.batches,
            "queries": queries}
    with tempfile.TemporaryDirectory(prefix="argus-pathway-") as work:
        out, log = Path(work, "out.json"), Path(work, "stderr")
        env = {**os.environ, "PATHWAY_THREADS": str(args.threads)}
        with open(log, "w") as stderr:
            done = subprocess.run([args.pathway_python, __file__, "--pathway-side",
                                   json.dumps(spec), str(out)], env=env, cwd=work,
                                  stdout=stderr, stderr=subprocess.STDOUT)
        text = log.read_text()
        if done.returncode:
            raise SystemExit(f"Pathway failed ({done.returncode}):\n{text[-5000:]}")
        warnings = [line for line in text.splitlines() if ("WARN" in line or "Error" in line)
                    and "Closing the data source" not in line]
        return json.loads(out.read_text()), warnings


def fresh_database(dsn: str | None) -> tuple[str, str]:
    """argus_pathway made anew: (its dsn, the postgres database's dsn to drop it)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from argus import roles
    from argus.api import resolve_dsn

    admin = make_conninfo(resolve_dsn(dsn), dbname="postgres")
    roles.drop_database(admin, DATABASE)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    return make_conninfo(admin, dbname=DATABASE), admin


def run_argus(db, args, sizes: list[int], queries: list[str]) -> dict:
    """The same history, queries and batches in argus: ms per batch (COPY + one cycle +
    every query's changes read, as Pathway's subscriptions receive theirs), ms of it
    copying, and seconds loading the history and registering the queries."""
    from argus.bench import workloads
    from argus.bench.runner import load
    from argus.bench.nexmark import QUERIES as SQL

    workload = workloads.nexmark(args.history, SEED)
    started = time.perf_counter()
    load(db, workload)
    for name in queries:
        db.register_query(name, SQL[name], force=True)
    load_s = time.perf_counter() - started
    db.conn.execute("ANALYZE")
    db.run()  # warm-up: this session compiles the network program once
    out = {"load_s": load_s, "times": {}, "copying": {}}
    for size in sizes:
        batches = [workload.batch(size) for _ in range(args.batches)]  # untimed
        db.conn.execute("CHECKPOINT")  # nobody else's dirty pages
        times = out["times"][str(size)] = []
        copying = out["copying"][str(size)] = []
        for batch in batches:
            started = time.perf_counter()
            for stream, rows in batch.items():
                db.insert(stream, rows)
            copied = time.perf_counter()
            db.run()
            for name in queries:  # delivered, as Pathway's subscriptions are
                db.new_results(name)
            times.append((time.perf_counter() - started) * 1000)
            copying.append((copied - started) * 1000)
    return out


def from_scratch(conn, name: str) -> list[tuple]:
    """The query's SQL over argus's stream histories."""
    from argus.bench.nexmark import QUERIES as SQL

    with conn.transaction():
        conn.execute("SET LOCAL search_path TO argus_streams, public")
        return conn.execute(SQL[name]).fetchall()


def same(left: list, right: list) -> bool:
    """Equal as multisets of rows; numbers within a relative 1e-9."""
    if len(left) != len(right):
        return False

    def key(row):
        return tuple((1, "") if v is None else (0, round(v, 6)) if isinstance(v, (int, float))
                     else (2, v) for v in row)

    for a, b in zip(sorted(left, key=key), sorted(right, key=key)):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def median(times: list[float]) -> float:
    """The median batch, the first left out (warm-up) when there are others."""
    return statistics.median(times[1:] if len(times) > 1 else times)


def report(args, sizes, queries, pathway: dict, warnings: list[str], ours: dict,
           equal: dict, server: str) -> None:
    import argus

    n, argus_times = args.batches, ours["times"]
    print(f"# Nexmark: argus vs Pathway\n\nH = {args.history:,} events of history, "
          f"N = {n} batches of B events, seed {SEED}; argus {argus.__version__} on {server}, "
          f"Pathway {pathway['version']} with PATHWAY_THREADS={pathway['threads']}; "
          f"one system at a time.\n")
    print(f"queries ({len(queries)}): {', '.join(queries)}\n")
    print("left out: " + "; ".join(f"{q}: {why}" for q, why in LEFT_OUT.items()) + "\n")
    print("| B (events per batch) | argus ms | Pathway ms | ratio (Pathway / argus) |")
    print("|---:|---:|---:|---:|")
    for size in sizes:
        a, p = median(argus_times[str(size)]), median(pathway["times"][str(size)])
        print(f"| {size:,} | {a:,.1f} | {p:,.1f} | {p / a:,.2f}× |")
    counted = {1: "the only batch", 2: "batch 2"}.get(n, f"batches 2–{n}")
    print(f"\nmedian of {counted} of each size (the first is warm-up, not counted when "
          "there are others); argus: COPY + one cycle + every query's changes read; "
          "Pathway: first event pushed → every subscription's on_time_end for the batch.")
    for size in map(str, sizes):
        print(f"- B = {int(size):,}, every batch, ms: argus "
              f"{', '.join(f'{t:.1f}' for t in argus_times[size])}; Pathway "
              f"{', '.join(f'{t:.1f}' for t in pathway['times'][size])}; of which "
              f"argus's COPY {median(ours['copying'][size]):.1f} (median), Pathway pushing "
              f"the events into its connector {median(pathway['pushing'][size]):.1f}")
    print(f"- history: argus {ours['load_s']:.1f} s (load + registering the queries), "
          f"Pathway {pathway['load_s']:.1f} s (pushed and computed)")
    print("\n| query | rows | Pathway = argus | argus = PostgreSQL from scratch |")
    print("|---|---:|:---:|:---:|")
    for name in queries:
        rows, with_argus, with_scratch = equal[name]
        print(f"| {name} | {rows:,} | {'yes' if with_argus else 'NO'} | "
              f"{'yes' if with_scratch else 'NO'} |")
    every = all(a and s for _, a, s in equal.values())
    print(f"\nall answers equal: {'yes' if every else 'NO'}")
    if pathway["untimed"]:
        print(f"\nwarning: {pathway['untimed']} Pathway output times without a batch's tick "
              f"(a batch split over several times: its time may be short)")
    for line in warnings:
        print(f"Pathway: {line}")


def main() -> None:
    from argus.bench.common import arguments

    import argus

    args = arguments(__doc__, history=100_000, batch="5000", batches=5,
                     queries=",".join(QUERIES), pathway_python="/tmp/pwvenv/bin/python",
                     threads=2)
    sizes = [int(s) for s in args.batch.split(",")]
    queries = [q.strip() for q in args.queries.split(",") if q.strip()]
    unknown = sorted(set(queries) - set(QUERIES))
    if unknown:
        raise SystemExit(f"no Pathway version of {', '.join(unknown)}")
    pathway, warnings = run_pathway(args, sizes, queries)
    dsn, admin = fresh_database(args.dsn)
    try:
        with argus.connect(dsn) as db:
            server = f"PostgreSQL {db.conn.info.server_version // 10000}"
            ours = run_argus(db, args, sizes, queries)
            equal = {}
            for name in queries:
                answer = [[plain(v) for v in row] for row in db.results(name)]
                scratch = [[plain(v) for v in row] for row in from_scratch(db.conn, name)]
                equal[name] = (len(answer), same(pathway["answers"][name], answer),
                               same(answer, scratch))
    finally:
        from argus import roles

        roles.drop_database(admin, DATABASE)
    report(args, sizes, queries, pathway, warnings, ours, equal, server)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pathway-side"]:
        pathway_side(json.loads(sys.argv[2]), sys.argv[3])
    else:
        main()
