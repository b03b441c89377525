"""One benchmark run: load a workload once into a fresh database, then measure every
method on the same data and the same batches. argus takes the batches back to back, as
it would from cron, with nothing else between its cycles; then the other methods take
them, each over its own copy of the streams (argus.bench.methods).

`scaling` registers the workload's queries in steps (100, 250, … queries) and, at each
step and batch size, times an argus cycle against the other methods (argus.bench.methods)
on the same batches; it also times each registration and compares every argus answer
with the re-run one at the end. `per_query` registers each query alone and compares
its cycle with re-running just that query, so that no query hides behind the others.
"""

from __future__ import annotations

import os

import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from .. import audit, roles
from ..errors import ArgusError
from ..nodes import LOADED
from ..api import Argus, connect, resolve_dsn
from .methods import Floor, MatViews, PgIvm, Rerun
from .workloads import Workload

DATABASE = "argus_bench"

Log = Callable[[str], None]


@dataclass
class Measure:
    """Median milliseconds per batch of each method, at one query count and batch size:
    from the batch's arrival (each method pays its own ingest) to current answers."""

    workload: str
    queries: int
    batch: int
    argus: float
    rerun: float
    matview: float
    floor: float
    pg_ivm: float | None  # None: pg_ivm unavailable
    ivm_queries: int  # queries pg_ivm accepted
    nodes: int
    state_bytes: int  # argus's node tables
    base_bytes: int  # the streams' histories
    register_ms: float  # mean registration time of the queries added at this step
    wal: float = 0.0  # bytes of WAL per batch, argus: the load and the cycle (median)
    floor_wal: float = 0.0  # the same, the COPY alone: the rows themselves, logged once
    equal: bool | None = None  # every argus answer equals the re-run one (last step)
    # the node audit (argus.audit) of the network at the last step: per sample size, the
    # flagged statements, one line each (None: not run, the session is no superuser's)
    audit: dict[int, list[str]] | None = None
    # where an argus cycle's time goes: node kind -> (ms evaluating, ms maintaining
    # histories), per cycle; "cycle" -> (the whole cycle on the server, 0)
    breakdown: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class PerQuery:
    workload: str
    query: str
    batch: int
    argus: float
    rerun: float  # COPY + the query re-run into a persistent table
    rerun_temp: float = 0.0  # COPY + the query re-run into a new temporary table
    pg_ivm: float | None = None  # None: pg_ivm unavailable, or it refused the query
    # the query evaluated by re-running it (argus.nodes.rerun) on the next batches of
    # the size: load + cycle, as `argus` (None: not measured)
    argus_rerun: float | None = None
    # argus's fixed cost, ms per batch: the load (db.insert) next to the floor (a bare
    # COPY of the same rows), the claim and stream history appends, and the cycle's own
    # bookkeeping (its time less every node's); the rest of `argus` is the query's nodes
    load: float = 0.0
    floor: float = 0.0
    claim: float = 0.0
    bookkeeping: float = 0.0

    @property
    def closest(self) -> float:
        """The smaller of the two ratios: how many times argus is faster than the
        cheaper re-run."""
        return min(self.rerun, self.rerun_temp or self.rerun) / self.argus if self.argus else 0


@dataclass
class Results:
    measures: list[Measure] = field(default_factory=list)
    per_query: list[PerQuery] = field(default_factory=list)
    registrations: list[tuple[str, int, float]] = field(default_factory=list)  # (w, n, ms)
    notices: list[str] = field(default_factory=list)
    server: str = ""
    data: list[str] = field(default_factory=list)  # what each workload ran on

    def notice(self, text: str) -> None:
        """Once per report, however many workloads run into it."""
        if text not in self.notices:
            self.notices.append(text)


def fresh_database(dsn: str | None) -> str:
    """The benchmarks' database made anew: argus_bench, or $ARGUS_BENCH_DATABASE."""
    name = os.environ.get("ARGUS_BENCH_DATABASE") or DATABASE
    admin = make_conninfo(resolve_dsn(dsn), dbname="postgres")
    roles.drop_database(admin, name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return make_conninfo(admin, dbname=name)


def load(db: Argus, workload: Workload, durability: str | None = None) -> None:
    """The streams and their history, claimed: the other methods copy the histories,
    which no query reads yet (rows would wait in the inboxes: unread_inbox_bytes).
    `durability`: the network's (None: a new database's default)."""
    if durability is not None:
        db.configure(durability=durability)
    unread = db.settings()["unread_inbox_bytes"]
    db.configure(unread_inbox_bytes=None)
    for stream, columns in workload.streams.items():
        db.create_stream(stream, columns, time_column=workload.time_columns.get(stream))
    for chunk in workload.history():
        for stream, rows in chunk.items():
            db.insert(stream, rows)
        db.run()
    db.configure(unread_inbox_bytes=unread)
    db.conn.execute("VACUUM ANALYZE")


def _ms(seconds: Sequence[float]) -> float:
    return statistics.median(seconds) * 1000


def _bytes(conn: psycopg.Connection, schema: str) -> int:
    return conn.execute("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint "
                        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = %s AND c.relkind = 'r'", (schema,)).fetchone()[0]


class Wal:
    """Bytes of WAL written since a mark (pg_current_wal_insert_lsn: what this server
    inserted, whoever wrote it; the benchmark runs alone)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def mark(self) -> str:
        return self.conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]

    def since(self, mark: str) -> float:
        return float(self.conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s::pg_lsn)",
            (mark,)).fetchone()[0])


class Settle:
    """CHECKPOINT (untimed) before argus's run of batches and before each baseline's turn
    at a batch, so that no method pays for writing out the pages another one dirtied
    (the re-runs rewrite whole result tables). argus's first cycle after it pays a
    full-page image for each page it touches, as the first cycle after any checkpoint
    does. Needs superuser or pg_checkpoint; without them, methods are timed as they come."""

    def __init__(self, conn: psycopg.Connection, results: Results) -> None:
        self.conn, self.enabled = conn, True
        try:
            self()
        except psycopg.errors.InsufficientPrivilege:
            self.enabled = False
            results.notice("no CHECKPOINT between methods (needs superuser or "
                           "pg_checkpoint): a method may pay for another's writes")

    def __call__(self) -> None:
        if self.enabled:
            self.conn.execute("CHECKPOINT")


def _argus(db: Argus, batch: dict[str, list[tuple]], runs: list[int] | None = None) -> float:
    """Seconds from the batch's arrival to its new results read: COPY into the inboxes,
    one cycle (whose run id is appended to `runs`), then every query's changes read, as
    a consumer of each answer takes them (deferring work into the read is not free)."""
    return sum(_argus_parts(db, batch, runs))


def _argus_parts(db: Argus, batch: dict[str, list[tuple]],
                 runs: list[int] | None = None) -> tuple[float, float, float]:
    """(seconds loading, seconds of the cycle, seconds reading the changes) of `_argus`."""
    names = [n for (n,) in db.conn.execute(
        "SELECT name FROM argus_catalog.queries WHERE status = 'ok' ORDER BY name")]
    started = time.perf_counter()
    for stream, rows in batch.items():
        db.insert(stream, rows)
    loaded = time.perf_counter()
    run_id = db.run().run_id
    if runs is not None:
        runs.append(run_id)
    cycled = time.perf_counter()
    for name in names:
        db.new_results(name)
    return loaded - started, cycled - loaded, time.perf_counter() - cycled


_NODES = """
SELECT run_id, coalesce(sum(r.ms + coalesce(r.flush_ms, 0)) FILTER (WHERE n.kind = ANY(%s)), 0),
       coalesce(sum(r.ms + coalesce(r.flush_ms, 0)), 0)
  FROM argus_catalog.run_nodes r JOIN argus_catalog.nodes n USING (node_id)
 WHERE r.run_id = ANY(%s) GROUP BY run_id
"""


def node_ms(conn: psycopg.Connection, runs: list[int]) -> dict[int, tuple[float, float]]:
    """Per run: (ms claiming and appending to the stream histories, ms of every node)."""
    return {run: (float(streams), float(every))
            for run, streams, every in conn.execute(_NODES, (LOADED, runs)).fetchall()}


_BREAKDOWN = """
SELECT n.kind, sum(r.ms) / %(cycles)s, sum(coalesce(r.flush_ms, 0)) / %(cycles)s
  FROM argus_catalog.run_nodes r JOIN argus_catalog.nodes n USING (node_id)
 WHERE r.run_id = ANY(%(runs)s) GROUP BY n.kind
UNION ALL
SELECT 'cycle', avg(extract(epoch FROM finished_at - started_at) * 1000), 0
  FROM argus_catalog.runs WHERE run_id = ANY(%(runs)s)
"""


def breakdown(conn: psycopg.Connection, runs: list[int]) -> dict[str, tuple[float, float]]:
    """Mean milliseconds per cycle by node kind (evaluating, maintaining), from the
    per-node timings every cycle records (argus_catalog.run_nodes)."""
    rows = conn.execute(_BREAKDOWN, {"runs": runs, "cycles": len(runs)}).fetchall()
    return {kind: (float(ev), float(mt)) for kind, ev, mt in rows}


def scaling(workload: Workload, dsn: str | None, counts: Sequence[int],
            sizes: Sequence[int], repeat: int, results: Results, log: Log,
            durability: str | None = None) -> None:
    with connect(fresh_database(dsn)) as db:
        conn = db.conn
        results.server = f"PostgreSQL {conn.info.server_version // 10000}"
        log(f"{workload.name}: loading the history")
        load(db, workload, durability)
        wal = Wal(conn)
        streams = list(workload.streams)
        floor, rerun, matview = Floor(conn, streams), Rerun(conn), MatViews(conn)
        settle = Settle(conn, results)
        why = PgIvm.available(conn)
        ivm = PgIvm(conn, streams) if why is None else None
        if why is not None:
            results.notice(f"pg_ivm skipped: {why}")
        done = 0
        for count in counts:
            count = min(count, len(workload.queries))
            log(f"{workload.name}: registering queries {done + 1}–{count}")
            times = []
            for name, query in workload.queries[done:count]:
                started = time.perf_counter()
                db.register_query(name, query, force=True)  # measured, whatever its size
                times.append((time.perf_counter() - started) * 1000)
                rerun.add(name, query)
                matview.add(name, query)
                if ivm is not None:
                    ivm.add(name, query)
            done = count
            conn.execute("ANALYZE")
            db.run()  # warm-up: this session compiles the new network program once
            for size in sizes:
                log(f"{workload.name}: {count} queries, batches of {size:,}")
                runs: list[int] = []
                t = _timed(db, [workload.batch(size) for _ in range(repeat)], runs, wal,
                           floor, rerun, matview, settle, ivm)
                nodes = conn.execute("SELECT count(*) FROM argus_catalog.nodes "
                                     "WHERE kind <> ALL(%s)", (LOADED,)).fetchone()[0]
                results.measures.append(Measure(
                    workload.name, count, size, _ms(t["argus"]), _ms(t["rerun"]),
                    _ms(t["matview"]), _ms(t["floor"]),
                    _ms(t["pg_ivm"]) if ivm is not None else None,
                    len(ivm.accepted) if ivm is not None else 0, nodes,
                    _bytes(conn, "argus_net"), _bytes(conn, "argus_streams"),
                    statistics.mean(times) if times else 0.0,
                    statistics.median(t["wal"]), statistics.median(t["floor_wal"]),
                    breakdown=breakdown(conn, runs)))
        results.measures[-1].equal = all(
            same(db.results(name), rerun.rows(name)) for name, _ in workload.queries[:done])
        log(f"{workload.name}: the node audit")
        results.measures[-1].audit = _audit(conn)
        if ivm is not None and ivm.refused:
            results.notices.append(f"pg_ivm refused {len(ivm.refused)} of {done} "
                                   f"{workload.name} queries")


def _timed(db: Argus, batches: list[dict[str, list[tuple]]], runs: list[int], wal: Wal,
           floor: Floor, rerun: Rerun, matview: MatViews, settle: Settle,
           ivm: PgIvm | None) -> dict[str, list[float]]:
    """Seconds per batch of each method (and WAL bytes of argus's and the floor's): argus
    takes the batches back to back, then every other method each batch in turn, each
    paying for its own ingest."""
    t: dict[str, list[float]] = {"argus": [], "rerun": [], "matview": [], "floor": [],
                                 "pg_ivm": [], "wal": [], "floor_wal": []}
    settle()
    for batch in batches:
        mark = wal.mark()
        t["argus"].append(_argus(db, batch, runs))
        t["wal"].append(wal.since(mark))
    for batch in batches:
        settle()
        mark = wal.mark()
        t["floor"].append(floor.ingest(batch))
        t["floor_wal"].append(wal.since(mark))
        settle()
        t["rerun"].append(t["floor"][-1] + rerun.run())
        settle()
        t["matview"].append(t["floor"][-1] + matview.run())
    if ivm is not None:
        settle()
        t["pg_ivm"] = [ivm.ingest(batch) for batch in batches]
    return t


def _audit(conn: psycopg.Connection) -> dict[int, list[str]] | None:
    try:
        found = audit.flagged(conn)
    except ArgusError:  # (auto_explain: a superuser's session only)
        return None
    return {size: [f"node {s.node_id} ({s.kind}): " + "; ".join(s.flags) for s in statements]
            for size, statements in found.items()}


def registration(workload: Workload, dsn: str | None, upto: int, results: Results,
                 log: Log) -> None:
    """Time registering query number 1, 2, … `upto` into one network (argus alone: the
    other methods have nothing to register)."""
    with connect(fresh_database(dsn)) as db:
        log(f"{workload.name}: loading the history (registration)")
        load(db, workload)
        for number, (name, query) in enumerate(workload.queries[:upto], 1):
            if number % 100 == 0:
                log(f"{workload.name}: registering query {number:,} of {upto:,}")
            started = time.perf_counter()
            db.register_query(name, query, force=True)  # measured, whatever its size
            results.registrations.append((workload.name, number,
                                          (time.perf_counter() - started) * 1000))


def per_query(workload: Workload, dsn: str | None, names: Sequence[str],
              sizes: Sequence[int], repeat: int, results: Results, log: Log,
              and_rerun: bool = True, durability: str | None = None) -> None:
    with connect(fresh_database(dsn)) as db:
        conn = db.conn
        log(f"{workload.name}: loading the history (each query alone)")
        load(db, workload, durability)
        streams = list(workload.streams)
        floor, rerun = Floor(conn, streams), Rerun(conn)
        settle = Settle(conn, results)
        ivm = PgIvm(conn, streams) if PgIvm.available(conn) is None else None
        for name, query in workload.queries:
            if name not in names:
                continue
            log(f"{workload.name}: {name} alone")
            db.register_query(name, query, force=True)  # measured, whatever its size
            rerun.add(name, query)
            with_ivm = ivm is not None and ivm.add(name, query)
            conn.execute("ANALYZE")
            db.run()  # warm-up, as in `scaling`
            for size in sizes:
                batches = [workload.batch(size) for _ in range(repeat)]
                t: dict[str, list[float]] = {"rerun": [], "rerun_temp": [], "pg_ivm": [],
                                             "floor": []}
                runs: list[int] = []
                settle()
                parts = [_argus_parts(db, batch, runs) for batch in batches]
                nodes = node_ms(conn, runs)
                for batch in batches:
                    settle()
                    t["floor"].append(floor.ingest(batch))
                    settle()
                    t["rerun"].append(t["floor"][-1] + rerun.run(only=name))
                    settle()
                    t["rerun_temp"].append(t["floor"][-1] + rerun.run(only=name,
                                                                      temporary=True))
                if ivm is not None:
                    settle()
                    t["pg_ivm"] = [ivm.ingest(batch) for batch in batches]
                results.per_query.append(PerQuery(
                    workload.name, name, size, _ms([sum(p) for p in parts]), _ms(t["rerun"]),
                    _ms(t["rerun_temp"]), _ms(t["pg_ivm"]) if with_ivm else None,
                    load=_ms([p[0] for p in parts]), floor=_ms(t["floor"]),
                    claim=statistics.median(nodes.get(r, (0, 0))[0] for r in runs),
                    bookkeeping=statistics.median(
                        cycle * 1000 - nodes.get(r, (0, 0))[1]
                        for (_, cycle, _), r in zip(parts, runs))))
            measured = [p for p in results.per_query if (p.workload, p.query) ==
                        (workload.name, name)]
            if and_rerun and any(p.closest < RERUN_WORTH for p in measured):
                _rerun_too(db, workload, name, sizes, repeat, settle, results)
            db.unregister_query(name)
            if with_ivm:
                ivm.drop(name)


RERUN_WORTH = 3.0  # a query re-running is no more than this many times slower than
# argus at some batch size is measured re-run by argus too (the others would only cost time)


def _rerun_too(db: Argus, workload: Workload, name: str, sizes: Sequence[int], repeat: int,
               settle: Settle, results: Results) -> None:
    """The query moved to re-running (argus.adapt) and measured again, on the next
    batches of each size."""
    db.migrate([name], evaluate="rerun")
    db.run()  # compiles the program again, untimed
    for size in sizes:
        batches = [workload.batch(size) for _ in range(repeat)]
        settle()
        timed = [_argus(db, batch) for batch in batches]
        for p in results.per_query:
            if (p.workload, p.query, p.batch) == (workload.name, name, size):
                p.argus_rerun = _ms(timed)


def same(a: list[tuple], b: list[tuple]) -> bool:
    """Bag equality, with floating point and numeric scale differences ignored."""
    def norm(v: object) -> object:
        if isinstance(v, float):
            return round(v, 6)
        if isinstance(v, Decimal):
            return round(v, 6).normalize() if v.is_finite() else v
        return v
    return Counter(tuple(map(norm, r)) for r in a) == Counter(tuple(map(norm, r)) for r in b)
