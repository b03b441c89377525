"""Benchmark: a 3-way self-join with a 20-day band window and a grouped aggregate with
HAVING, each maintained by argus against re-running it from scratch.

Loads 100,000 transfers of history; for each 1,000-row batch measures, in the same
process on the same server and data, one argus cycle (the query alone registered) and
the query re-run from scratch into a result table, and checks that both agree.

Usage: python -m argus.bench.algebra [--dsn DSN] [--history N] [--batch N] [--batches N]
"""

from __future__ import annotations

import statistics
import time
from collections import Counter

from psycopg import sql

import argus
from argus.bench.common import arguments, fresh_database
from argus.bench.datagen import TRANSFER_COLUMNS, TransferGenerator

QUERIES = {
    "band_join_3way": """
        SELECT r1.tran_id AS first_id, r2.tran_id AS second_id, r3.tran_id AS third_id
          FROM transfers r1
          JOIN transfers r2 ON r2.sender = r1.receiver
          JOIN transfers r3 ON r3.sender = r2.receiver
         WHERE r1.amount > 100000
           AND r2.amount >= r1.amount * 0.5 AND r3.amount >= r2.amount * 0.5
           AND r2.tran_date BETWEEN r1.tran_date AND r1.tran_date + 20
           AND r3.tran_date BETWEEN r2.tran_date AND r2.tran_date + 20""",
    "grouped_having": """
        SELECT sender, count(*) AS n, sum(amount) AS total, avg(amount) AS mean,
               max(amount) AS largest
          FROM transfers GROUP BY sender HAVING sum(amount) > 1000000""",
}


def main() -> None:
    args = arguments(__doc__, history=100_000, batch=1_000, batches=10)
    print(f"{args.history:,} rows of history, batches of {args.batch:,} "
          f"(median of {args.batches})")
    for name, query in QUERIES.items():
        gen = TransferGenerator(seed=3)
        with argus.connect(fresh_database(args.dsn)) as db:
            db.create_stream("transfers", TRANSFER_COLUMNS, time_column="tran_date")
            db.insert("transfers", gen.batch(args.history))
            db.run()
            started = time.perf_counter()
            db.register_query(name, query)
            registration = time.perf_counter() - started
            conn = db.conn
            scratch = query.replace("FROM transfers", "FROM argus_streams.transfers") \
                           .replace("JOIN transfers", "JOIN argus_streams.transfers")
            conn.execute(sql.SQL("CREATE TABLE rerun AS {} WITH NO DATA").format(sql.SQL(scratch)))
            conn.execute("VACUUM ANALYZE")
            cycles, reruns = [], []
            for _ in range(args.batches):
                db.insert("transfers", gen.batch(args.batch))
                t0 = time.perf_counter()
                db.run()
                cycles.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                with conn.transaction():
                    conn.execute("TRUNCATE rerun")
                    conn.execute(sql.SQL("INSERT INTO rerun {}").format(sql.SQL(scratch)))
                reruns.append(time.perf_counter() - t0)
            same = Counter(db.results(name)) == Counter(
                map(tuple, conn.execute("SELECT * FROM rerun").fetchall()))
            rows = len(db.results(name))
        c, r = statistics.median(cycles) * 1000, statistics.median(reruns) * 1000
        print(f"{name:16s} argus cycle {c:8.1f} ms   re-run {r:8.1f} ms   "
              f"argus is {r / c:6.1f}x faster   ({rows:,} result rows, answers equal: {same}, "
              f"registration {registration * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
