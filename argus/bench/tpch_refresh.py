"""TPC-H with both refresh functions, over tables that change: RF1 inserts new orders
and their line items, RF2 deletes as many of the oldest (lowest order keys, as the
specification's RF2 picks them) with their line items. The eight tables are ordinary
tables of the application that argus follows (`argus track`); untracked copies take the
same statements, and the baselines read those copies.

Per refresh pair, on the same data: the writers' RF1 + RF2 statements on the tracked
tables, argus's cycle and every query's changes read (what a consumer of each answer
pays), the pairs back to back in one session (as `argus run --follow` runs them); then, pair by pair
on the copies, the same statements, re-running every query (CREATE TABLE AS) and REFRESH
MATERIALIZED VIEW of every query; where the server has pg_ivm, the same statements on a
third copy carrying one IMMV per query pg_ivm accepts (maintained inside the
statements). At the end every answer is compared with the re-run's; then two more pairs
are applied, each cycle run as from cron (a new session: connecting, compiling the
program, planning every statement anew), and the answers compared with the queries run
on the tracked tables. ms. A CHECKPOINT
(untimed) precedes argus's run of pairs, pg_ivm's run of pairs and each other baseline's
step, as in `argus bench`: none pays for writing out the pages another dirtied (the
re-runs rewrite whole tables), and argus and pg_ivm each pay the full-page images of the
first pages they touch after it once, as after any checkpoint of a server, not at every
pair (until 2026-12-05 a CHECKPOINT preceded every step of every method: each cycle then
logged whole every index page it touched, 3.6 MB of TPC-H's history indexes, which a
server checkpointing every few minutes writes once per page per interval). WAL: the
bytes the server wrote for a pair, argus's writer and cycle against the untracked
writer's (after its CHECKPOINT: every page first written is logged whole).

Usage: python -m argus.bench.tpch_refresh [--dsn DSN] [--scale-milli 100] [--pairs 3]
       [--method trigger|slot] [--skip 17,20] [--top-k] [--durability derived|logged]
       (--skip: queries left out, "" for none; Q17 and Q20 re-run for minutes at scale
       0.1 over copies without indexes; --top-k: the queries' ORDER BY … LIMIT kept;
       --durability: the network's, default a new database's)
"""

from __future__ import annotations

import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from dataclasses import dataclass, field
from types import SimpleNamespace

import psycopg
import sqlglot
from psycopg import sql
from sqlglot import exp

import argus
from argus import audit
from argus.bench import tpch
from argus.bench.methods import PgIvm
from argus.bench.runner import Settle, Wal
from argus.bench.workloads import TPCH_QUERIES, continuous
from argus.bench.common import arguments, fresh_database

CRON_PAIRS = 2  # pairs whose cycles run as from cron, after the timed ones
KEYS = {"region": ["r_regionkey"], "nation": ["n_nationkey"], "supplier": ["s_suppkey"],
        "customer": ["c_custkey"], "part": ["p_partkey"], "partsupp": ["ps_partkey", "ps_suppkey"],
        "orders": ["o_orderkey"], "lineitem": ["l_orderkey", "l_linenumber"]}


def ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def over_copies(query: str, schema: str = "plain") -> str:
    """The query over copies of the tables (plain: untracked and unmaintained)."""
    tree = sqlglot.parse_one(query, read="postgres")
    ctes = {c.alias for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if table.name in KEYS and table.name not in ctes:
            table.set("db", exp.to_identifier(schema))
    return tree.sql(dialect="postgres")


def bag(rows) -> Counter:
    def norm(v):
        if isinstance(v, float):
            return round(v, 4) if math.isfinite(v) else v
        if isinstance(v, Decimal):
            return round(v, 4)
        return v
    return Counter(tuple(map(norm, r)) for r in rows)


@dataclass
class Bench:
    """One run's state: the network's session, the generated data (DuckDB's), and what
    registration found."""

    db: argus.Argus
    args: SimpleNamespace
    data: object  # tpch.generate's
    con: object  # DuckDB, holding the generated tables
    wal: Wal
    queries: dict[str, str] = field(default_factory=dict)
    immvs: list[str] = field(default_factory=list)  # the queries pg_ivm maintains
    settle: Settle | None = None  # a CHECKPOINT before a run of timed steps
    median: dict[str, float] = field(default_factory=dict)  # of the timed pairs

    @property
    def conn(self) -> psycopg.Connection:
        return self.db.conn


def main() -> None:
    skip = "17,20"
    if "--skip" in sys.argv:
        at = sys.argv.index("--skip")
        skip = sys.argv[at + 1]
        del sys.argv[at:at + 2]
    args = arguments(__doc__, scale_milli=100, pairs=3, method="trigger", top_k=False,
                     durability="")
    scale = args.scale_milli / 1000
    numbers = [n for n in TPCH_QUERIES if str(n) not in skip.split(",")]
    started = time.perf_counter()
    data = tpch.generate(scale, Path(tempfile.mkdtemp(prefix="argus-tpch-rf-")),
                         batches=args.pairs + CRON_PAIRS, share=0.001)
    con = tpch._duckdb()
    texts = dict(con.execute("SELECT query_nr, query FROM tpch_queries()").fetchall())
    print(f"TPC-H scale {scale}: generated in {ms(started) / 1000:.1f} s", flush=True)
    dsn = fresh_database(args.dsn)
    with argus.connect(dsn) as db:
        if args.durability:
            db.configure(durability=args.durability)
        bench = Bench(db, args, data, con, Wal(db.conn))
        why_not_ivm = _load(bench)
        _track(bench)
        _register(bench, {f"q{n:02d}": continuous(texts[n], args.top_k) for n in numbers},
                  why_not_ivm)
        _audit(bench.conn)
        batches = [{t: con.execute("SELECT * FROM read_parquet(?)", [str(files[t])]).fetchall()
                    for t in ("orders", "lineitem")} for files in data.refresh]
        _pairs(bench, batches[:args.pairs])
        _from_cron(bench, dsn, batches[args.pairs:])


def _audit(conn: psycopg.Connection) -> None:
    """The node audit: statements reading far more than their delta."""
    for size, flagged in audit.flagged(conn).items():
        print(f"audit, a sample of {size} rows: {len(flagged)} statements flagged"
              + "".join(f"\n  node {s.node_id} ({s.kind}): " + "; ".join(s.flags)
                        for s in flagged), flush=True)
    print()


def _load(bench: Bench) -> str | None:
    """The tables created, loaded, copied (plain, and ivm where pg_ivm is installed) and
    analyzed; why pg_ivm is not used (None: it is)."""
    conn, data = bench.conn, bench.data
    conn.execute("CREATE SCHEMA plain")
    why_not_ivm = PgIvm.available(conn)
    schemas = ("public", "plain") + (("ivm",) if why_not_ivm is None else ())
    if why_not_ivm is None:
        conn.execute("CREATE SCHEMA ivm")
    started = time.perf_counter()
    for table, columns in data.columns.items():
        for schema in schemas:
            conn.execute(sql.SQL("CREATE TABLE {} ({}, PRIMARY KEY ({}))").format(
                sql.Identifier(schema, table),
                sql.SQL(", ").join(sql.SQL("{} {} NOT NULL").format(
                    sql.Identifier(c), sql.SQL(t)) for c, t in columns.items()),
                sql.SQL(", ").join(map(sql.Identifier, KEYS[table]))))
        rows = bench.con.execute("SELECT * FROM read_parquet(?)", [str(data.initial[table])])
        with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(
                sql.Identifier("public", table))) as copy:
            while chunk := rows.fetchmany(50_000):
                for row in chunk:
                    copy.write_row(row)
        for schema in schemas[1:]:
            conn.execute(sql.SQL("INSERT INTO {} SELECT * FROM {}").format(
                sql.Identifier(schema, table), sql.Identifier("public", table)))
    conn.execute("VACUUM ANALYZE")
    print(f"loaded in {ms(started) / 1000:.1f} s", flush=True)
    return why_not_ivm


def _track(bench: Bench) -> None:
    started, method = time.perf_counter(), bench.args.method
    for table in bench.data.columns:
        if method == "slot":  # text columns: the whole old row in the WAL
            bench.conn.execute(sql.SQL("ALTER TABLE {} REPLICA IDENTITY FULL").format(
                sql.Identifier("public", table)))
        bench.db.track(f"public.{table}", method=method)
    bench.db.run()
    print(f"argus track --method {method} of the 8 tables and the first cycle: "
          f"{ms(started) / 1000:.1f} s", flush=True)


def _register(bench: Bench, queries: dict[str, str], why_not_ivm: str | None) -> None:
    """The queries argus accepts registered, each with a materialized view over the
    copies, and an IMMV where pg_ivm accepts it."""
    conn, started, refused = bench.conn, time.perf_counter(), {}
    for name, query in queries.items():
        try:
            bench.db.register_query(name, query)
        except argus.ArgusError as exc:
            refused[name] = str(exc)
        conn.execute(sql.SQL("CREATE MATERIALIZED VIEW {} AS {}").format(
            sql.Identifier("plain", f"mv_{name}"), sql.SQL(over_copies(query))))
    for name in refused:
        print(f"{name}: refused: {refused[name]}")
    bench.queries = {n: q for n, q in queries.items() if n not in refused}
    ivm_refused = {}
    for name, query in bench.queries.items() if why_not_ivm is None else ():
        try:
            with conn.transaction():
                conn.execute("SELECT pgivm.create_immv(%s, %s)",
                             (f"ivm.immv_{name}", over_copies(query, "ivm")))
            bench.immvs.append(name)
        except psycopg.Error as exc:
            ivm_refused[name] = exc.diag.message_primary
    print(f"pg_ivm: {why_not_ivm}" if why_not_ivm else
          f"pg_ivm accepts {len(bench.immvs)} of {len(bench.queries)} queries "
          f"({', '.join(bench.immvs)}); "
          "refused: " + "; ".join(f"{n}: {m}" for n, m in ivm_refused.items()))
    conn.execute("VACUUM ANALYZE")
    print(f"{len(bench.queries)} queries registered in {ms(started) / 1000:.1f} s", flush=True)


def _refresh(bench: Bench, schema: str, new: dict, settle: bool = True
             ) -> tuple[float, list[int]]:
    """RF1 then RF2 on one copy of the tables (after a CHECKPOINT if `settle`): ms, and
    the orders RF2 deleted."""
    conn = bench.conn
    (old,) = conn.execute(sql.SQL(
        "SELECT array_agg(o_orderkey) FROM (SELECT o_orderkey FROM {} "
        "ORDER BY o_orderkey LIMIT %s) o").format(sql.Identifier(schema, "orders")),
        (len(new["orders"]),)).fetchone()
    if settle:
        bench.settle()
    started = time.perf_counter()
    with conn.transaction():  # RF1: its orders and line items, one transaction
        for table in ("orders", "lineitem"):
            with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(
                    sql.Identifier(schema, table))) as copy:
                for row in new[table]:
                    copy.write_row(row)
    with conn.transaction():  # RF2
        conn.execute(sql.SQL("DELETE FROM {} WHERE l_orderkey = ANY(%s)").format(
            sql.Identifier(schema, "lineitem")), (old,))
        conn.execute(sql.SQL("DELETE FROM {} WHERE o_orderkey = ANY(%s)").format(
            sql.Identifier(schema, "orders")), (old,))
    return ms(started), old


def _pairs(bench: Bench, batches: list[dict]) -> None:
    """argus takes the pairs back to back in one session after a CHECKPOINT (as in
    `argus bench`), then pg_ivm the same way; then each other baseline takes the same
    pairs over its own copies of the tables, a CHECKPOINT before each step. A row per
    pair, the median, the last cycle's heaviest nodes, and the answers compared."""
    ivm = bool(bench.immvs)
    bench.settle = Settle(bench.conn, SimpleNamespace(notice=print))  # (its notice, printed)
    print("| pair | RF1 + RF2 rows | writer: tracked | writer: untracked | argus cycle | "
          "argus: reading the changes | re-run | REFRESH MV | "
          "argus (writer + cycle + reading) vs re-run | vs REFRESH | "
          "WAL MiB: writer + cycle / writer untracked |"
          + (f" writer: pg_ivm ({len(bench.immvs)} IMMVs) | vs pg_ivm |" if ivm else ""))
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
          + ("---:|---:|" if ivm else ""))
    timed, last = [], None
    bench.settle()
    for new in batches:
        t, last = _argus_pair(bench, new)
        timed.append(t)
    if ivm:  # (its own copies: back to back too, after their CHECKPOINT)
        bench.settle()
        for t, new in zip(timed, batches):
            t["ivm"], _ = _refresh(bench, "ivm", new, settle=False)
    per_query = {name: [] for name in bench.queries}
    totals = {}
    for i, (t, new) in enumerate(zip(timed, batches)):
        _baselines(bench, t, new, per_query)
        for k, v in t.items():
            totals.setdefault(k, []).append(v)
        print(f"| {i + 1} | ~{t['rows']:,} |" + _row(t), flush=True)
    bench.median = {k: statistics.median(v) for k, v in totals.items() if v}
    print("| median | |" + _row(bench.median))
    _heaviest(bench.conn, last)
    print()
    print("re-run per query (median ms): " + ", ".join(
        f"{name} {statistics.median(v):.0f}" for name, v in per_query.items()))
    _compare(bench)


def _argus_pair(bench: Bench, new: dict) -> tuple[dict, argus.CycleReport]:
    """The pair on the tracked tables, argus's cycle and every query's changes read:
    the times, and the cycle's report."""
    t, mark = {}, bench.wal.mark()
    t["tracked"], old = _refresh(bench, "public", new, settle=False)
    t["rows"] = len(new["orders"]) + len(new["lineitem"]) + 2 * len(old)
    started = time.perf_counter()
    report = bench.db.run()
    t["cycle"] = ms(started)
    t["wal"] = bench.wal.since(mark)
    started = time.perf_counter()  # a consumer of each answer takes its changes
    for name in bench.queries:
        bench.db.new_results(name)
    t["read"] = ms(started)
    return t, report


def _baselines(bench: Bench, t: dict, new: dict, per_query: dict) -> None:
    """The same pair on the copies: re-running every query, REFRESH MATERIALIZED VIEW
    (pg_ivm's IMMVs took theirs back to back: `_pairs`)."""
    conn, mark = bench.conn, bench.wal.mark()
    t["plain"], _ = _refresh(bench, "plain", new)
    t["plain_wal"] = bench.wal.since(mark)
    t["rerun"] = 0.0
    bench.settle()
    for name, query in bench.queries.items():
        started = time.perf_counter()
        with conn.transaction():
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                sql.Identifier("plain", f"rerun_{name}")))
            conn.execute(sql.SQL("CREATE TABLE {} AS {}").format(
                sql.Identifier("plain", f"rerun_{name}"), sql.SQL(over_copies(query))))
        per_query[name].append(ms(started))
        t["rerun"] += per_query[name][-1]
    bench.settle()
    started = time.perf_counter()
    for name in bench.queries:
        with conn.transaction():
            conn.execute(sql.SQL("REFRESH MATERIALIZED VIEW {}").format(
                sql.Identifier("plain", f"mv_{name}")))
    t["refresh"] = ms(started)


def _heaviest(conn: psycopg.Connection, report: argus.CycleReport) -> None:
    node_ms = dict(conn.execute("SELECT node_id, ms + coalesce(flush_ms, 0) FROM "
                                "argus_catalog.run_nodes WHERE run_id = %s",
                                (report.run_id,)).fetchall())
    heavy = sorted(node_ms.items(), key=lambda n: -n[1])[:8]
    kinds = dict(conn.execute("SELECT node_id, kind || coalesce(' ' || hist_name, '') FROM "
                              "argus_catalog.nodes WHERE node_id = ANY(%s)",
                              ([n for n, _ in heavy],)).fetchall())
    print(f"the last cycle's heaviest nodes ({sum(node_ms.values()):.0f} ms of "
          f"{report.seconds * 1000:.0f} in nodes): "
          + ", ".join(f"{kinds[n]} {t:.1f}" for n, t in heavy))


def _compare(bench: Bench) -> None:
    """argus's answers against the re-run's, pg_ivm's against the re-run's."""
    queries, conn = bench.queries, bench.conn
    wrong = [name for name in queries if bag(bench.db.results(name)) != _rerun(conn, name)]
    print(f"answers equal to the re-run's: {len(queries) - len(wrong)} of {len(queries)}"
          + (f"; DIFFERENT: {', '.join(wrong)}" if wrong else ""))
    if bench.immvs:
        wrong = [name for name in bench.immvs
                 if _rerun(conn, name, "ivm.immv") != _rerun(conn, name)]
        print(f"pg_ivm's answers equal to the re-run's: {len(bench.immvs) - len(wrong)} of "
              f"{len(bench.immvs)}" + (f"; DIFFERENT: {', '.join(wrong)}" if wrong else ""))


def _from_cron(bench: Bench, dsn: str, batches: list[dict]) -> None:
    """More pairs, each cycle in a session of its own (as from cron), back to back after
    a CHECKPOINT; then the answers against the queries run on the tracked tables."""
    cold, median = [], bench.median
    bench.settle()
    for new in batches:
        _refresh(bench, "public", new, settle=False)
        started = time.perf_counter()
        with argus.connect(dsn) as cron:  # (conninfo drops a password)
            cron.run()
        cold.append(ms(started))
    cron_ms = statistics.median(cold)
    print(f"from cron (each cycle in a new session, connecting included): "
          f"{', '.join(f'{c:.0f}' for c in cold)} ms, against {median['cycle']:.0f} in one "
          f"session; writer + cycle + reading "
          f"{median['rerun'] / (median['tracked'] + cron_ms + median['read']):.1f}× re-running")
    queries = bench.queries
    wrong = [name for name, query in queries.items()
             if bag(bench.db.results(name)) != bag(bench.conn.execute(query))]
    print(f"after them, answers equal to the queries run on the tracked tables: "
          f"{len(queries) - len(wrong)} of {len(queries)}"
          + (f"; DIFFERENT: {', '.join(wrong)}" if wrong else ""))


def _rerun(conn, name: str, prefix: str = "plain.rerun") -> Counter:
    """The rows of <prefix>_<name>, in the re-run's columns (pg_ivm adds its own)."""
    schema, table = f"{prefix}_{name}".split(".")
    columns = [c.name for c in conn.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(
        sql.Identifier("plain", f"rerun_{name}"))).description]
    return bag(conn.execute(sql.SQL("SELECT {} FROM {}").format(
        sql.SQL(", ").join(map(sql.Identifier, columns)), sql.Identifier(schema, table))))


def _row(t: dict[str, float]) -> str:
    """A pair's (or the median's) cells after its number and size."""
    argus_ms = t["tracked"] + t["cycle"] + t["read"]
    return (f" {t['tracked']:.0f} | {t['plain']:.0f} | {t['cycle']:.0f} | {t['read']:.0f} | "
            f"{t['rerun']:.0f} | "
            f"{t['refresh']:.0f} | {(t['plain'] + t['rerun']) / argus_ms:.1f}× | "
            f"{(t['plain'] + t['refresh']) / argus_ms:.1f}× | "
            f"{t['wal'] / 2**20:.2f} / {t['plain_wal'] / 2**20:.2f} |"
            + (f" {t['ivm']:.0f} | {t['ivm'] / argus_ms:.1f}× |" if "ivm" in t else ""))


if __name__ == "__main__":
    main()
