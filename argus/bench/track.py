"""Change capture (argus track): what it costs the application's writers, and the
cycle that follows, against the same statements on an untracked copy of the table and
against re-running the queries, on the same data; by triggers, or by a replication slot
(--method slot, on a server with wal_level = logical). Where the server has pg_ivm, a
third copy carries one IMMV per query, maintained inside each writer's statement.

`accounts` rows of `customers` customers in public.accounts, tracked by argus, and an
identical untracked plain.accounts. Each kind of statement runs on both, alternately
(median ms of `repeat`): a one-row INSERT, a one-row UPDATE, an UPDATE of 100 / 1,000 /
10,000 rows, a DELETE of 100 rows. Then the cycle that takes a batch of UPDATEs against
re-running the two queries of bench/tables.py over plain.accounts.

Usage: python -m argus.bench.track [--dsn DSN] [--accounts 100000] [--customers 1000] [--repeat 9]
                            [--method trigger|slot]
"""

from __future__ import annotations

import random
import statistics
import time

import argus
from argus.bench.methods import PgIvm
from argus.bench.common import arguments, fresh_database
from argus.bench.tables import QUERIES, agree, over_plain, rerun


def timed(conn, statement: str, params=()) -> float:
    started = time.perf_counter()
    conn.execute(statement, params)  # our constant SQL, values as parameters
    return (time.perf_counter() - started) * 1000


def main() -> None:
    args = arguments(__doc__, accounts=100_000, customers=1_000, repeat=9, method="trigger")
    rng = random.Random(3)
    with argus.connect(fresh_database(args.dsn)) as db:
        conn = db.conn  # autocommit: each statement is the writer's transaction
        why_not_ivm = _tables(conn, args)
        started = time.perf_counter()
        db.track("public.accounts", method=args.method)
        db.track("public.customers", method=args.method)
        track_ms = (time.perf_counter() - started) * 1000
        db.run()
        for name, query in QUERIES.items():
            db.register_query(name, query)
            if why_not_ivm is None:
                conn.execute("SELECT pgivm.create_immv(%s, %s)",
                             (f"ivm.immv_{name}", over_plain(query, "ivm")))
        conn.execute("VACUUM ANALYZE")
        print(f"{args.accounts:,} accounts of {args.customers:,} customers; `argus track "
              f"--method {args.method}` of both tables: {track_ms:.0f} ms")
        print(f"pg_ivm: {why_not_ivm or 'one IMMV per query over ivm.accounts, ivm.customers'}")
        ivm = why_not_ivm is None
        _statements(db, args, rng, ivm)
        print()
        _batches(db, args, rng, ivm)
        agree(conn, "rerun")
        if ivm:
            agree(conn, "ivm.immv")


def _tables(conn, args) -> str | None:
    """The accounts and customers, tracked (public), plain and under pg_ivm (if it is
    installed: else why not)."""
    conn.execute("CREATE SCHEMA plain")
    why_not_ivm = PgIvm.available(conn)
    schemas = ("public", "plain") + (("ivm",) if why_not_ivm is None else ())
    if why_not_ivm is None:
        conn.execute("CREATE SCHEMA ivm")
    for schema in schemas:
        conn.execute(f"CREATE TABLE {schema}.accounts (id bigint PRIMARY KEY, customer int "
                     "NOT NULL, balance numeric(12,2) NOT NULL)")
        conn.execute(f"INSERT INTO {schema}.accounts SELECT g, g %% %s, (g * 7919) %% 10000 "
                     "FROM generate_series(1, %s) g", (args.customers, args.accounts))
        conn.execute(f"CREATE TABLE {schema}.customers (id int PRIMARY KEY, region text)")
        conn.execute(f"INSERT INTO {schema}.customers SELECT g, 'r' || g %% 17 "
                     "FROM generate_series(0, %s) g", (args.customers - 1,))
    if args.method == "slot":  # its text column needs the whole old row in the WAL
        conn.execute("ALTER TABLE public.customers REPLICA IDENTITY FULL")
    return why_not_ivm


def _statements(db, args, rng, ivm: bool) -> None:
    """What tracking costs a writer's statement, untracked against tracked (and pg_ivm)."""
    conn = db.conn
    print("| writer's statement | untracked | tracked | overhead |"
          + (" pg_ivm | pg_ivm overhead |" if ivm else ""))
    print("|---|---:|---:|---:|" + ("---:|---:|" if ivm else ""))
    next_id = args.accounts + 1
    cases = [("INSERT of 1 row", "INSERT INTO {t} VALUES (%s, 1, 5)", lambda: (next_id,)),
             ("UPDATE of 1 row", "UPDATE {t} SET balance = balance + 1 WHERE id = %s",
              lambda: (rng.randrange(1, args.accounts),))]
    for size in (100, 1_000, 10_000):
        cases.append((f"UPDATE of {size:,} rows",
                      "UPDATE {t} SET balance = balance + 1 WHERE id BETWEEN %s AND %s",
                      lambda size=size: (lambda a: (a, a + size - 1))(
                          rng.randrange(1, args.accounts - size))))
    cases.append(("DELETE of 100 rows", "DELETE FROM {t} WHERE id BETWEEN %s AND %s",
                  lambda: (lambda a: (a, a + 99))(rng.randrange(1, args.accounts - 100))))
    for label, statement, params in cases:
        times = {"plain.accounts": [], "public.accounts": []}
        if ivm:
            times["ivm.accounts"] = []
        for _ in range(args.repeat):
            values = params()
            for table in times:
                times[table].append(timed(conn, statement.format(t=table), values))
            next_id += 1
        plain, tracked, *immv = (statistics.median(v) for v in times.values())
        print(f"| {label} | {plain:.2f} | {tracked:.2f} | {tracked - plain:+.2f} ms "
              f"({tracked / plain:.1f}×) |" + "".join(
                  f" {m:.2f} | {m - plain:+.2f} ms ({m / plain:.1f}×) |" for m in immv))
        db.run()


def _batches(db, args, rng, ivm: bool) -> None:
    """Batches of updates: the writer's statement and a cycle against re-running."""
    conn = db.conn
    print("| updates per batch | writer: tracked UPDATE | writer: untracked | argus cycle "
          "| re-run | argus (update + cycle) vs (update + re-run) |"
          + (" pg_ivm UPDATE | argus vs pg_ivm |" if ivm else ""))
    print("|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if ivm else ""))
    for size in (100, 1_000, 10_000):
        t = {k: [] for k in ("tracked", "plain", "cycle", "rerun", "ivm")}
        for _ in range(3):
            ids = rng.sample(range(1, args.accounts), size)
            balances = [rng.randrange(10_000) for _ in ids]
            for table, key in (("public.accounts", "tracked"), ("plain.accounts", "plain"),
                               ("ivm.accounts", "ivm"))[:3 if ivm else 2]:
                t[key].append(timed(conn, f"UPDATE {table} a SET balance = b.balance FROM "
                                          "unnest(%s::bigint[], %s::numeric[]) AS b(id, "
                                          "balance) WHERE a.id = b.id", (ids, balances)))
            started = time.perf_counter()
            db.run()
            t["cycle"].append((time.perf_counter() - started) * 1000)
            t["rerun"].append(rerun(conn))
        m = {k: statistics.median(v) for k, v in t.items() if v}
        argus_ms = m['tracked'] + m['cycle']
        print(f"| {size:,} | {m['tracked']:.1f} | {m['plain']:.1f} | {m['cycle']:.1f} | "
              f"{m['rerun']:.1f} | {(m['plain'] + m['rerun']) / argus_ms:.1f}× |"
              + (f" {m['ivm']:.1f} | {m['ivm'] / argus_ms:.1f}× |" if ivm else ""))


if __name__ == "__main__":
    main()
