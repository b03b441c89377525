"""WITH RECURSIVE maintained by semi-naive rounds (argus.nodes.recursive) against running
the same recursive query again, on the same transfer graph.

Reachability over transfers above 10 (who money can reach), over a random graph of
`accounts` accounts and `edges` transfers of history; then batches of new transfers
(three of each size): argus's cycle against PostgreSQL running the query from scratch
over the same histories into a temporary table. Median ms.

Usage: python -m argus.bench.recursive [--dsn DSN] [--accounts 200000] [--edges 100000]
"""

from __future__ import annotations

import random
import statistics
import time

import argus
from argus.bench.common import arguments, fresh_database

QUERY = ("WITH RECURSIVE reach(src, dst) AS (SELECT sender, receiver FROM transfers "
         "WHERE amount > 10 UNION SELECT r.src, t.receiver FROM reach r "
         "JOIN transfers t ON t.sender = r.dst AND t.amount > 10) SELECT src, dst FROM reach")
SIZES = (10, 100, 1000)


def edges(rng: random.Random, accounts: int, n: int) -> list[tuple[int, int, int]]:
    return [(rng.randrange(accounts), rng.randrange(accounts), rng.randrange(100))
            for _ in range(n)]


def main() -> None:
    args = arguments(__doc__, accounts=200_000, edges=100_000)
    rng = random.Random(7)
    with argus.connect(fresh_database(args.dsn)) as db:
        db.create_stream("transfers", {"sender": "bigint", "receiver": "bigint",
                                       "amount": "int"})
        db.insert("transfers", edges(rng, args.accounts, args.edges))
        db.run()
        db.conn.execute("ANALYZE")
        started = time.perf_counter()
        db.register_query("reach", QUERY)
        print(f"registered in {(time.perf_counter() - started) * 1000:,.0f} ms; "
              f"{db.conn.execute('SELECT count(*) FROM argus_results.reach').fetchone()[0]:,} "
              "pairs")
        from_history = QUERY.replace("FROM transfers", "FROM argus_streams.transfers") \
                            .replace("JOIN transfers", "JOIN argus_streams.transfers")
        print("| new transfers per batch | argus cycle ms | re-run ms | ratio |")
        print("|---:|---:|---:|---:|")
        for size in SIZES:
            cycle, rerun = [], []
            for _ in range(3):
                db.insert("transfers", edges(rng, args.accounts, size))
                started = time.perf_counter()
                db.run()
                cycle.append((time.perf_counter() - started) * 1000)
                with db.conn.transaction(force_rollback=True):
                    started = time.perf_counter()
                    db.conn.execute(f"CREATE TEMP TABLE argus_rerun AS {from_history}")
                    rerun.append((time.perf_counter() - started) * 1000)
            a, b = statistics.median(cycle), statistics.median(rerun)
            print(f"| {size:,} | {a:,.1f} | {b:,.1f} | {b / a:,.1f}× |")


if __name__ == "__main__":
    main()
