"""argus on one server against argus on a local Citus cluster (a coordinator and two
workers on this machine), on the same data: the transfers workload's queries over a
history of `history` transfers, the stream's history distributed by sender on the
cluster; or TPC-H (--tpch-milli: its scale in thousandths) with orders and lineitem
distributed by order key (co-located) and the other tables copied to every node
(reference tables; --local-dimensions: kept on the coordinator), its refresh batches
of 0.1% of the orders. Per batch size, the median cycle (ms) on the
coordinator alone (nothing distributed: the same server, so the difference is Citus's)
and with the histories distributed; then whether every answer agrees. On a 2-core machine the
cluster cannot be faster: this measures what distributing costs.

Usage: python -m argus.bench.citus [--history 100000] [--queries 10] [--cycles 5]
                             [--tpch-milli 100 [--local-dimensions]]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import argus
from argus import citus_local
from argus.bench.runner import load
from argus.bench.workloads import BENCH_TPCH, tpch, transfers
from argus.errors import ArgusError
from argus.bench.common import arguments


def main() -> None:
    args = arguments(__doc__, history=100_000, queries=10, cycles=5, tpch_milli=0,
                     local_dimensions=False)
    keys = ({"orders": "o_orderkey", "lineitem": "l_orderkey"}
            if args.tpch_milli else {"transfers": "sender"})
    why = citus_local.unavailable()
    if why:
        raise SystemExit(f"no local Citus cluster: {why}")
    cluster = citus_local.start(Path(tempfile.mkdtemp(prefix="argus-bench-citus-")))
    opened: list = []
    try:
        dbs = {name: _network(cluster, name, args, keys, opened)
               for name in ("single", "sharded")}
        _cycles(dbs, args)
        _compared(dbs, args)
    finally:
        for db in opened:
            db.close()
        cluster.stop()


def _network(cluster, name: str, args, keys: dict[str, str], opened: list):
    """A database of the cluster with the workload loaded and its queries registered:
    on the coordinator alone ("single"), or with the streams distributed ("sharded")."""
    db = argus.connect(cluster.create_database(name))
    opened.append(db)
    workload = (tpch(args.tpch_milli / 1000, args.cycles, only=BENCH_TPCH)
                if args.tpch_milli else transfers(args.history, args.queries))
    started = time.perf_counter()
    load(db, workload)
    if name == "sharded":
        for stream, column in keys.items():
            db.distribute(stream, column)
        if args.tpch_milli and not args.local_dimensions:
            for stream in sorted(set(workload.streams) - set(keys)):
                db.replicate(stream)
    refused = []
    for query, text in workload.queries:
        try:
            db.register_query(query, text)
        except ArgusError as exc:
            refused.append(f"{query}: {exc}")
    db.conn.execute("VACUUM ANALYZE")
    print(f"{name}: {len(workload.queries) - len(refused)} queries, loaded and "
          f"registered in {time.perf_counter() - started:.0f} s"
          + ("".join(f"\n  refused {r[:300]}" for r in refused)), flush=True)
    return db, workload


def _cycles(dbs: dict, args) -> None:
    """Milliseconds per cycle (median) on one server and sharded, per batch size."""
    print("| batch | one server (coordinator alone) | sharded over 2 workers | ratio |")
    print("|---:|---:|---:|---:|")
    for size in (0,) if args.tpch_milli else (100, 1_000, 10_000):
        ms = {}
        for name, (db, workload) in dbs.items():
            times = []
            for _ in range(args.cycles):
                for stream, rows in workload.batch(size).items():
                    db.insert(stream, rows)
                started = time.perf_counter()
                db.run()
                times.append((time.perf_counter() - started) * 1000)
            ms[name] = statistics.median(times)
        print(f"| {f'{size:,}' if size else 'a refresh batch'} | {ms['single']:.1f} | "
              f"{ms['sharded']:.1f} | "
              f"{ms['sharded'] / ms['single']:.2f}× |", flush=True)


def _compared(dbs: dict, args) -> None:
    """The answers of both, and where the sharded network keeps its nodes and rows."""
    registered = set.intersection(*({q.name for q in db.queries()} for db, _ in dbs.values()))
    single, sharded = dbs["single"][0], dbs["sharded"][0]
    differ = [q for q in sorted(registered)
              if Counter(single.results(q)) != Counter(sharded.results(q))]
    print(f"answers equal on both: {len(registered) - len(differ)} of {len(registered)}"
          + (f"; DIFFERENT: {', '.join(differ)}" if differ else ""))
    kept, spread = sharded.conn.execute(
        "SELECT count(*) FILTER (WHERE sharded_by IS NULL), count(sharded_by) "
        "FROM argus_catalog.nodes WHERE kind <> ALL(argus.kinds('loaded'))").fetchone()
    print(f"nodes sharded over the workers: {spread} of {kept + spread}")
    local, remote = sharded.conn.execute(
        """SELECT (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = 'argus_net' AND c.relkind = 'r'),
                  (SELECT coalesce(sum(shard_size), 0) FROM citus_shards
                    WHERE table_name::text LIKE 'argus_net.%')""").fetchone()
    print(f"the nodes' state: {local / 2**20:.1f} MiB on the coordinator (its deltas "
          f"and the nodes kept there), {remote / 2**20:.1f} MiB on the workers")
    if not args.tpch_milli:  # (TPC-H's refresh batches are used up)
        print(f"commands sent to the workers by one cycle of 1,000 rows: "
              f"{remote_commands(*dbs['sharded'])}")
    shards = sharded.conn.execute(
        "SELECT nodeport, count(*), pg_size_pretty(sum(shard_size)) FROM citus_shards "
        "WHERE table_name::text LIKE 'argus_streams.%' GROUP BY 1 ORDER BY 1").fetchall()
    print("the histories' shards: " + ", ".join(f"port {p}: {n} shards, {s}"
                                              for p, n, s in shards))


def remote_commands(db, workload) -> str:
    """What Citus sends the workers in one cycle (citus.log_remote_commands), by kind."""
    sent: Counter = Counter()

    def heard(diag) -> None:
        text = diag.message_primary or ""
        if text.startswith("issuing "):
            sent[text.split()[1].upper()] += 1

    for stream, rows in workload.batch(1_000).items():
        db.insert(stream, rows)
    db.conn.execute("SET citus.log_remote_commands = on")
    db.conn.execute("SET client_min_messages = log")
    db.conn.add_notice_handler(heard)
    try:
        db.run()
    finally:
        db.conn.remove_notice_handler(heard)
        db.conn.execute("RESET client_min_messages")
        db.conn.execute("RESET citus.log_remote_commands")
    return f"{sum(sent.values())} (" + ", ".join(f"{n} {k}" for k, n in sent.most_common()) + ")"


if __name__ == "__main__":
    main()
