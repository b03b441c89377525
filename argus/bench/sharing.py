"""Benchmark: what sharing is worth, as the ARGUS thesis measured it (its Table 1).

Registers the same generated families of transfer queries (argus.bench.families) under six
network-generation configurations, each in a fresh database with the same history:

  AllSharing  sharing-selection, canonicalization, join sharing, the bounds the
              conditions imply (transitivity inference) — argus's default
  NoInfer     AllSharing without transitivity inference
  NonJoinS    sharing-selection, canonicalization, joins not shared
  NonCanon    sharing-selection, predicates compared as written (no subsumption)
  MatchPlan   match-plan, canonicalization, join sharing
  NoSharing   every query its own nodes

At each query count (100, 250, 500, 1,000 by default) it reports the nodes in the
network, the mean registration time of the queries registered since the last count,
and the median cycle time over batches of new transfers — all in one run.

Usage: python -m argus.bench.sharing [--dsn DSN] [--history N] [--batch N] [--batches N]
                               [--sizes 100,250,500,1000] [--configs AllSharing,…]
"""

from __future__ import annotations

import argparse
import statistics
import time

import argus
from argus.bench.datagen import TRANSFER_COLUMNS, TransferGenerator
from argus.mqo.sharing import Sharing
from argus.bench.families import transfer_queries
from argus.bench.common import fresh_database

CONFIGS = {
    "AllSharing": Sharing("selection"),
    "NoInfer": Sharing("selection", infer_bounds=False),
    "NonJoinS": Sharing("selection", join_sharing=False),
    "NonCanon": Sharing("selection", canonicalize=False),
    "MatchPlan": Sharing("match-plan"),
    "NoSharing": Sharing("none"),
}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--history", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--sizes", default="100,250,500,1000")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def run(config: str, args, sizes: list[int]) -> list[dict]:
    gen = TransferGenerator(seed=3)
    queries = transfer_queries(max(sizes), seed=args.seed)
    out = []
    with argus.connect(fresh_database(args.dsn), sharing=CONFIGS[config]) as db:
        db.create_stream("transfers", TRANSFER_COLUMNS, time_column="tran_date")
        db.insert("transfers", gen.batch(args.history))
        db.run()
        db.conn.execute("ANALYZE")
        done = 0
        for size in sizes:
            started = time.perf_counter()
            for name, sql_text in queries[done:size]:
                db.register_query(name, sql_text)
            registration = (time.perf_counter() - started) / (size - done)
            done = size
            db.conn.execute("ANALYZE")
            cycles = []
            for _ in range(args.batches):
                db.insert("transfers", gen.batch(args.batch))
                t0 = time.perf_counter()
                db.run()
                cycles.append(time.perf_counter() - t0)
            nodes, state = db.conn.execute(
                "SELECT count(*), coalesce(sum(hist_rows) FILTER (WHERE NOT layout ? "
                "'virtual'), 0)::bigint FROM argus_catalog.nodes JOIN argus_catalog.node_stats "
                "USING (node_id) WHERE kind <> ALL(argus.kinds('loaded'))"
            ).fetchone()  # views keep no rows
            row = {"config": config, "queries": size, "nodes": nodes, "state": state,
                   "register_ms": registration * 1000,
                   "cycle_ms": statistics.median(cycles) * 1000}
            print(f"  {config:10s} {size:5d} queries: {nodes:5d} nodes, {state:10,d} rows of "
                  f"state, {row['register_ms']:7.1f} ms per registration, "
                  f"cycle {row['cycle_ms']:8.1f} ms", flush=True)
            out.append(row)
    return out


def main() -> None:
    args = arguments()
    sizes = [int(s) for s in args.sizes.split(",")]
    configs = args.configs.split(",")
    print(f"{args.history:,} transfers of history; cycles on batches of {args.batch:,} "
          f"(median of {args.batches}); query families from argus.bench.families, seed {args.seed}")
    rows = [r for config in configs for r in run(config, args, sizes)]
    print("\n| queries | configuration | nodes | rows of state | registration (ms/query) "
          "| cycle (ms) |\n|---:|---|---:|---:|---:|---:|")
    for size in sizes:
        for r in rows:
            if r["queries"] == size:
                print(f"| {size} | {r['config']} | {r['nodes']:,} | {r['state']:,} | "
                      f"{r['register_ms']:.1f} | {r['cycle_ms']:.1f} |")


if __name__ == "__main__":
    main()
