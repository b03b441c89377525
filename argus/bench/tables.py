"""A table updated in place (argus.tables) under per-customer aggregates and a join,
against re-running the queries and REFRESH MATERIALIZED VIEW over a plain table that
takes the same updates, on the same data.

`accounts` accounts of `customers` customers; batches of balance updates (three of each
size). The writer's cost: argus's `db.update` (a COPY into the inbox, checked against
the key) against a plain `UPDATE … FROM` of the same rows. Then the cycle (argus)
against the queries re-run into tables, and against refreshing one materialized view
per query. Median ms.

Usage: python -m argus.bench.tables [--dsn DSN] [--accounts 100000] [--customers 1000]
"""

from __future__ import annotations

import random
import statistics
import time

import argus
from argus.bench.common import arguments, fresh_database

QUERIES = {
    "per_customer": "SELECT customer, count(*) AS n, sum(balance) AS total, "
                    "min(balance) AS lo, max(balance) AS hi FROM accounts GROUP BY customer",
    "rich_regions": "SELECT c.region, count(*) AS n FROM accounts a JOIN customers c "
                    "ON c.id = a.customer WHERE a.balance > 9000 GROUP BY c.region",
}
SIZES = (100, 1_000, 10_000)


def ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def over_plain(query: str, schema: str = "plain") -> str:
    """The query over copies of the tables (plain: untracked and unmaintained)."""
    return query.replace(" accounts", f" {schema}.accounts").replace(" customers",
                                                                     f" {schema}.customers")


def rerun(conn) -> float:
    """Every query re-run into a new table plain.rerun_<name>: ms."""
    started = time.perf_counter()
    with conn.transaction():
        for name, query in QUERIES.items():
            conn.execute(f"DROP TABLE IF EXISTS plain.rerun_{name}")
            conn.execute(f"CREATE TABLE plain.rerun_{name} AS " + over_plain(query))
    return ms(started)


def agree(conn, table: str) -> None:
    """Print whether each query's answer equals <table>_<name>'s rows (default schema:
    plain)."""
    for name in QUERIES:
        other = f"{table}_{name}" if "." in table else f"plain.{table}_{name}"
        columns = ", ".join(c.name for c in conn.execute(
            f"SELECT * FROM argus_results.{name} LIMIT 0").description)  # (pg_ivm adds some)
        same = conn.execute(f"SELECT count(*) FROM ((SELECT {columns} FROM argus_results.{name} "
                            f"EXCEPT ALL SELECT {columns} FROM {other}) UNION ALL (SELECT "
                            f"{columns} FROM {other} EXCEPT ALL SELECT {columns} FROM "
                            f"argus_results.{name})) d").fetchone()[0] == 0
        print(f"{name}: argus's answer equals {other}'s: {'yes' if same else 'NO'}")


def _timed(db, batch: list[tuple], t: dict[str, list[float]]) -> None:
    """One batch of updates: argus's writer and cycle, then a plain table's UPDATE, the
    re-run and the materialized views refreshed."""
    conn = db.conn
    started = time.perf_counter()
    db.update("accounts", batch)
    t["update"].append(ms(started))
    started = time.perf_counter()
    db.run()
    t["cycle"].append(ms(started))
    with conn.transaction():
        started = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute("CREATE TEMP TABLE batch (id bigint, customer int, "
                        "balance numeric(12,2)) ON COMMIT DROP")
            with cur.copy("COPY batch FROM STDIN") as copy:
                for row in batch:
                    copy.write_row(row)
            cur.execute("UPDATE plain.accounts a SET customer = b.customer, "
                        "balance = b.balance FROM batch b WHERE a.id = b.id")
        t["plain"].append(ms(started))
    t["rerun"].append(rerun(conn))
    started = time.perf_counter()
    with conn.transaction():
        for name in QUERIES:
            conn.execute(f"REFRESH MATERIALIZED VIEW plain.mv_{name}")
    t["refresh"].append(ms(started))


def main() -> None:
    args = arguments(__doc__, accounts=100_000, customers=1_000)
    rng = random.Random(11)
    with argus.connect(fresh_database(args.dsn)) as db:
        conn = db.conn
        db.create_table("accounts", {"id": "bigint", "customer": "int",
                                     "balance": "numeric(12,2)"}, primary_key="id")
        db.create_table("customers", {"id": "int", "region": "text"}, primary_key="id")
        accounts = [(i, rng.randrange(args.customers), rng.randrange(10_000))
                    for i in range(args.accounts)]
        customers = [(i, f"r{i % 17}") for i in range(args.customers)]
        db.insert("accounts", accounts)
        db.insert("customers", customers)
        db.run()
        conn.execute("CREATE SCHEMA plain")
        conn.execute("CREATE TABLE plain.accounts (LIKE argus_streams.accounts "
                     "INCLUDING INDEXES)")
        conn.execute("CREATE TABLE plain.customers (LIKE argus_streams.customers "
                     "INCLUDING INDEXES)")
        conn.execute("INSERT INTO plain.accounts SELECT * FROM argus_streams.accounts")
        conn.execute("INSERT INTO plain.customers SELECT * FROM argus_streams.customers")
        for name, query in QUERIES.items():
            db.register_query(name, query)
            conn.execute(f"CREATE MATERIALIZED VIEW plain.mv_{name} AS "  # our constant SQL
                         + over_plain(query))
        conn.execute("VACUUM ANALYZE")
        print(f"{args.accounts:,} accounts, {args.customers:,} customers; queries: "
              + ", ".join(QUERIES))
        print("| updates per batch | writer: db.update | writer: plain UPDATE | argus cycle "
              "| re-run | REFRESH MV | argus (update + cycle) vs re-run | vs REFRESH |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in SIZES:
            t = {k: [] for k in ("update", "plain", "cycle", "rerun", "refresh")}
            for _ in range(3):
                _timed(db, [(i, rng.randrange(args.customers), rng.randrange(10_000))
                            for i in rng.sample(range(args.accounts), size)], t)
            m = {k: statistics.median(v) for k, v in t.items()}
            argus_ms = m["update"] + m["cycle"]
            print(f"| {size:,} | {m['update']:.1f} | {m['plain']:.1f} | {m['cycle']:.1f} | "
                  f"{m['rerun']:.1f} | {m['refresh']:.1f} | "
                  f"{(m['plain'] + m['rerun']) / argus_ms:.1f}× | "
                  f"{(m['plain'] + m['refresh']) / argus_ms:.1f}× |")
        agree(conn, "mv")


if __name__ == "__main__":
    main()
