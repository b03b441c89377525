"""Top-K over an insert-only stream: ranking the kept rows with the new ones (the merge,
argus.nodes.window) against ranking the whole partition, on the same Nexmark events.

Two queries: Nexmark q19 (the top 10 bids of each auction) and a global top 10 of all
bids (ORDER BY … LIMIT). Each way in its own database over the same history, then three
batches of each size; the median cycle in ms.

Usage: python -m argus.bench.topk [--dsn DSN] [--events 100000]
"""

from __future__ import annotations

import statistics

import argus
import argus.nodes.window as window
from argus.bench import workloads
from argus.bench.runner import load
from argus.bench.nexmark import QUERIES
from argus.bench.common import arguments, cycles, fresh_database

TOP_K = {"q19": QUERIES["q19"],
         "top10": "SELECT auction, bidder, price FROM bid "
                  "ORDER BY price DESC, date_time, bidder LIMIT 10"}
SIZES = (100, 1000, 10_000)


def measure(dsn_arg, events: int) -> dict[int, float]:
    workload = workloads.nexmark(events)
    with argus.connect(fresh_database(dsn_arg)) as db:
        load(db, workload)
        for name, query in TOP_K.items():
            db.register_query(name, query)
        db.conn.execute("ANALYZE")
        return {size: statistics.median(cycles(db, workload, size, 3)) for size in SIZES}


def main() -> None:
    args = arguments(__doc__, events=100_000)
    merged = measure(args.dsn, args.events)
    window._kept_as_parent_rows = lambda node, parent: None  # every partition whole
    whole = measure(args.dsn, args.events)
    print("| events per batch | merge ms | whole partition ms | ratio |")
    print("|---:|---:|---:|---:|")
    for size in SIZES:
        print(f"| {size:,} | {merged[size]:,.1f} | {whole[size]:,.1f} | "
              f"{whole[size] / merged[size]:,.1f}× |")


if __name__ == "__main__":
    main()
