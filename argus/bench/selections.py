"""Benchmark: one cycle of 20 selection queries against recomputing them.

Loads 100,000 transfers of history, registers 20 selection queries (thresholds,
account filters, computed columns), then for each 1,000-row batch measures, in the same
process on the same server and data:

  argus        one cycle (claim, evaluate, flush)
  rerun        each query re-run from scratch into a result table (cron + plain SQL)
  matview      REFRESH MATERIALIZED VIEW of one view per query
  floor        inserting the batch into a plain table with no queries at all

Usage: python -m argus.bench.selections [--dsn DSN] [--history N] [--batch N] [--batches N]
"""

from __future__ import annotations

import statistics
import time

from psycopg import sql

import argus
from argus.bench.common import arguments, fresh_database
from argus.bench.datagen import TRANSFER_COLUMNS, TransferGenerator

QUERIES = [f"SELECT tran_id, amount FROM transfers WHERE amount > {t}"
           for t in (1_000, 10_000, 50_000, 100_000, 500_000, 1_000_000)]
QUERIES += [f"SELECT tran_id, sender, receiver FROM transfers WHERE sender = 'acct{i:05d}'"
            for i in (7, 42, 99, 123, 1500)]
QUERIES += [f"SELECT tran_id, amount * 0.92 AS eur FROM transfers "
            f"WHERE amount BETWEEN {lo} AND {lo * 2} AND receiver LIKE 'acct0{d}%'"
            for lo, d in ((5_000, 1), (20_000, 2), (80_000, 3))]
QUERIES += [f"SELECT tran_id, tran_date FROM transfers WHERE extract(isodow FROM tran_date) = {d} "
            f"AND amount > 250000" for d in (1, 3, 6, 7)]
QUERIES += ["SELECT tran_id FROM transfers WHERE sender = receiver",
            "SELECT tran_id, upper(sender) AS s FROM transfers WHERE amount % 1000000 < 100 "
            "AND amount > 1000000"]
assert len(QUERIES) == 20


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    args = arguments(__doc__, history=100_000, batch=1_000, batches=10)
    dsn = fresh_database(args.dsn)
    gen = TransferGenerator(seed=1)
    db = argus.connect(dsn)
    db.create_stream("transfers", TRANSFER_COLUMNS, time_column="tran_date")
    db.insert("transfers", gen.batch(args.history))
    db.run()
    for i, q in enumerate(QUERIES):
        db.register_query(f"q{i:02d}", q)
    conn = db.conn
    conn.execute("CREATE TABLE floor (LIKE argus_streams.transfers)")
    for i, q in enumerate(QUERIES):
        conn.execute(sql.SQL("CREATE TABLE {} AS {} WITH NO DATA").format(
            sql.Identifier(f"rerun_{i}"), sql.SQL(q.replace("FROM transfers",
                                                             "FROM argus_streams.transfers"))))
        conn.execute(sql.SQL("CREATE MATERIALIZED VIEW {} AS {}").format(
            sql.Identifier(f"mv_{i}"), sql.SQL(q.replace("FROM transfers",
                                                          "FROM argus_streams.transfers"))))
    conn.execute("VACUUM ANALYZE")

    def rerun() -> None:
        with conn.transaction():
            for i, q in enumerate(QUERIES):
                conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(f"rerun_{i}")))
                conn.execute(sql.SQL("INSERT INTO {} {}").format(
                    sql.Identifier(f"rerun_{i}"),
                    sql.SQL(q.replace("FROM transfers", "FROM argus_streams.transfers"))))

    def matviews() -> None:
        with conn.transaction():
            for i in range(len(QUERIES)):
                conn.execute(sql.SQL("REFRESH MATERIALIZED VIEW {}").format(
                    sql.Identifier(f"mv_{i}")))

    times: dict[str, list[float]] = {"argus": [], "rerun": [], "matview": [], "floor": []}
    for _ in range(args.batches):
        batch = gen.batch(args.batch)
        with conn.cursor() as cur, cur.copy("COPY floor FROM STDIN") as copy:
            started = time.perf_counter()
            for row in batch:
                copy.write_row(row)
        times["floor"].append(time.perf_counter() - started)
        db.insert("transfers", batch)
        times["argus"].append(timed(db.run))
        times["rerun"].append(timed(rerun))
        times["matview"].append(timed(matviews))

    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(f"{len(QUERIES)} selection queries, {args.history:,} rows of history, "
          f"batches of {args.batch:,} (median of {args.batches}), PostgreSQL "
          f"{conn.info.server_version // 10000}")
    for key, label in (("argus", "argus cycle"), ("rerun", "re-run from scratch"),
                       ("matview", "REFRESH MATERIALIZED"), ("floor", "floor (COPY the batch)")):
        faster = med[key] / med["argus"]
        ratio = "" if key in ("argus", "floor") else f"   argus is {faster:.1f}x faster"
        print(f"  {label:<24}{med[key]:8.1f} ms{ratio}")
    db.close()


if __name__ == "__main__":
    main()
