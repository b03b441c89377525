"""Run-time re-planning on workloads we did not write: TPC-H and Nexmark.

For each: the history loaded, the queries registered, six cycles of batches; then every
query with joins planned again (argus.adapt: the check's cost, and what it decides on
data that does not drift), then each forced to its next tree (the pause: the build;
answers and last changes must read the same across), and three more cycles (what they
cost against the three before: JISC's joins complete there). Once per migration
strategy, each on its own copy of the same data.

Usage: python -m argus.bench.replan [--dsn DSN] [--tpch-scale-thousandths 50]
       [--nexmark-events 50000]
"""

from __future__ import annotations

import statistics
import time
from collections import Counter

import argus
from argus.bench import workloads
from argus.bench.runner import load
from argus.bench.common import arguments, cycles, fresh_database


def bag(rows) -> Counter:
    return Counter(map(tuple, rows))


def measure(dsn_arg, workload, batch: int, strategy: str) -> None:
    db = argus.connect(fresh_database(dsn_arg))
    db.configure(reoptimize_every=None, migration=strategy)
    load(db, workload)
    for name, query in workload.queries:
        db.register_query(name, query)
    quiet = cycles(db, workload, batch, 6)[-3:]
    started = time.perf_counter()
    decisions = db.migrate(dry_run=True)
    ms = (time.perf_counter() - started) * 1000
    print(f"{workload.name}: {len(decisions)} queries with joins planned again in {ms:,.0f} ms "
          f"({ms / max(len(decisions), 1):,.0f} each); would migrate: "
          f"{[d.query for d in decisions if d.migrated]}")
    for d in decisions:
        if d.prediction.trees:
            print(f"  {d.query}: {d.why}")
    builds, same = [], True
    for d in decisions:
        before = bag(db.results(d.query)), bag(db.new_results(d.query))
        (moved,) = db.migrate([d.query], force=True)
        if moved.migrated:
            builds.append(moved.build_ms)
        same &= (bag(db.results(d.query)), bag(db.new_results(d.query))) == before
    after = cycles(db, workload, batch, 3)
    print(f"  forced ({strategy}): {len(builds)} migrated, build ms median "
          f"{statistics.median(builds) if builds else 0:,.0f} (max {max(builds, default=0):,.0f}), "
          f"total {sum(builds):,.0f}; answers and last changes equal across: "
          f"{'yes' if same else 'NO'}; the 3 cycles before: "
          f"{', '.join(f'{ms:,.0f}' for ms in quiet)} ms, after: "
          f"{', '.join(f'{ms:,.0f}' for ms in after)} ms")
    db.close()


def main() -> None:
    args = arguments(__doc__, tpch_scale_thousandths=50, nexmark_events=50_000)
    for strategy in ("moving-state", "jisc"):
        measure(args.dsn, workloads.tpch(args.tpch_scale_thousandths / 1000, 10), 150, strategy)
    for strategy in ("moving-state", "jisc"):
        measure(args.dsn, workloads.nexmark(args.nexmark_events), 1000, strategy)


if __name__ == "__main__":
    main()
