"""Benchmark: the same workload under two layouts, in one run on the same data.

  heuristic  every node keeps a table of its rows (settings.layout heuristic: argus
             before conditional materialization)
  cost       conditional materialization (the default): a selection over a stream that
             passes most of its rows (more than virtual_selectivity, 0.3, by PostgreSQL's
             estimate) is a view of the stream, and an inner join holding more than
             virtual_join_growth (4) times its inputs' rows is a view of their join

For each workload (the transfer queries of `argus bench`, loose 3-way chains alone and
with them, TPC-H's maintained queries, Nexmark's) and layout: a fresh database, the history
loaded, the queries registered, then batches; prints the median cycle, the state the
network keeps beside the stream histories, the registration time, and the nodes that
are views.

Usage: python -m argus.bench.layout [--dsn DSN] [--history N] [--queries N] [--loose N]
       [--batch N] [--batches N] [--tpch-scale-thousandths N] [--nexmark-events N]
       [--only K]   (only the K-th workload of the table, from 1)
"""

from __future__ import annotations

import statistics
import time

import argus
from argus.bench import workloads
from argus.bench.runner import load
from argus.network import network_bytes
from argus.bench.common import arguments, cycles, fresh_database

LAYOUTS = ("heuristic", "cost")

def measure(dsn_arg, make, layout: str, batch: int, batches: int) -> dict:
    workload = make()
    db = argus.connect(fresh_database(dsn_arg))
    db.configure(layout=layout)
    load(db, workload)
    started = time.perf_counter()
    for name, query in workload.queries:
        db.register_query(name, query)
    registration = time.perf_counter() - started
    db.conn.execute("VACUUM ANALYZE")
    times = cycles(db, workload, batch, batches)
    state = network_bytes(db.conn) / 2**20
    (views,) = db.conn.execute(  # (not the changes views of deferred joins)
        "SELECT count(*) FROM argus_catalog.nodes WHERE layout ? 'virtual'").fetchone()
    (nodes,) = db.conn.execute(
        "SELECT count(*) FROM argus_catalog.nodes "
        "WHERE kind <> ALL(argus.kinds('loaded'))").fetchone()
    accuracy = db.estimate_accuracy()
    db.close()
    return {"cycle": statistics.median(times), "state": float(state), "nodes": nodes,
            "views": views, "registration": registration, "accuracy": accuracy}


def main() -> None:
    args = arguments(__doc__, history=100_000, queries=150, loose=6, batch=1_000, batches=7,
                     only=0,
                     tpch_scale_thousandths=100, nexmark_events=100_000)
    runs = {
        f"transfers {args.queries}q, batch {args.batch:,}":
            (lambda: workloads.transfers(args.history, args.queries), args.batch),
        f"{args.loose} loose chains alone, batch {args.batch:,}":
            (lambda: workloads.transfers(args.history, 0, loose=args.loose), args.batch),
        f"transfers {args.queries}q + {args.loose} loose chains, batch {args.batch:,}":
            (lambda: workloads.transfers(args.history, args.queries, loose=args.loose),
             args.batch),
        f"TPC-H {args.tpch_scale_thousandths / 1000:g}, 15 queries":
            (lambda: workloads.tpch(args.tpch_scale_thousandths / 1000, args.batches + 1),
             0),
        f"Nexmark, {args.nexmark_events:,} events, 12 queries, batch {args.batch:,}":
            (lambda: workloads.nexmark(args.nexmark_events), args.batch),
    }
    print("| workload | layout | cycle ms | network state MiB | registration s | nodes | views |")
    print("|---|---|---:|---:|---:|---:|---:|")
    accuracy = []
    for number, (label, (make, batch)) in enumerate(runs.items(), 1):
        if args.only not in (0, number):
            continue
        for layout in LAYOUTS:
            r = measure(args.dsn, make, layout, batch, args.batches)
            print(f"| {label} | {layout} | {r['cycle']:.1f} | {r['state']:.1f} | "
                  f"{r['registration']:.1f} | {r['nodes']} | {r['views']} |", flush=True)
            accuracy += [(label, a) for a in r["accuracy"]]
    print("\nThe join order's estimates against the cycles (cost layout; medians of "
          "measured / estimated):\n")
    print("| workload | kind | nodes | rows | within 2× | new rows per cycle | within 2× |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, a in accuracy:
        rate = "" if a.rate is None else f"{a.rate:.2f} | {a.rate_within_2x:.0%}"
        print(f"| {label} | {a.kind} | {a.nodes} | {a.rows:.2f} | {a.rows_within_2x:.0%} | "
              f"{rate or ' | '} |")


if __name__ == "__main__":
    main()
