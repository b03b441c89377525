"""Issue 52's drift workload under two queries that share its three-way join.

Streams a(k, x, t), b(k, y, t), c(y, z, t), each read through a 10-minute window; each
batch is one minute of event time (3,000 rows of a and b, 300 of c, times --scale).
Two queries share `a ⋈ b ⋈ c` with `a.x < 5 AND c.z < 5`: its rows, and a count per
c.z. Before the drift the filter on a passes 5% of its rows and the one on c all of
them; after it, the other way round, so the best intermediate join flips. A join two
queries share was free to each of them alone, so before argus planned sharers together
neither ever left it: the static layout. Three layouts on the same rows: static
(reoptimize_every null), adaptive (every 3 cycles) and Zhu's trigger alone (every 50).
VACUUM ANALYZE after every cycle, untimed, as autovacuum would. Each answer is checked
against its SQL over the stream histories after the last cycle.

`--only rows` runs issue 52's own workload (the query `rows` alone), `--only pairs,rows` a
shared node that should be split: `pairs` is a ⋈ b, and `rows` reads it until its
best tree leaves it for b ⋈ c (in the rates' flip); `--nodes` prints,
per layout, where its last 8 cycles went (`run_nodes`: ms evaluating + flushing, rows).

`--flip rates`: the streams' rates flip instead of the filters' pass rates, and the
answer is small next to the costly intermediate join: every filter passes every row,
b.y and c.y range over 30,000 values, and per minute a brings 150 rows before the flip
and 3,000 after, c 3,000 then 150, b 3,000 throughout. In the windows a ⋈ b holds
~15,000 rows before and ~300,000 after, b ⋈ c ~30,000 then ~1,500, the answer ~15,000
throughout. (In the filters' flip the answer's own churn, ~36,000 rows in and out a
cycle, is most of what the best tree does: no tree can be 3 times faster there.)

Usage: python -m argus.bench.drift_shared [--dsn DSN] [--before 12] [--after 20] [--scale 1.0]
           [--only NAME[,NAME…]] [--flip filters|rates] [--nodes]
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import time
from collections import Counter

import argus
from argus.admission import over_histories
from argus.bench.common import arguments, fresh_database

WINDOW = "t > argus_now() - interval '10 minutes'"
JOIN = ("FROM a JOIN b ON a.k = b.k JOIN c ON b.y = c.y WHERE a.x < 5 AND c.z < 5 "
        f"AND a.{WINDOW} AND b.{WINDOW} AND c.{WINDOW}")
QUERIES = {"rows": f"SELECT a.k, a.x, b.y, c.z {JOIN}",
           "per_z": f"SELECT c.z, count(*) AS n, sum(a.x) AS sx {JOIN} GROUP BY c.z",
           # a ⋈ b as an answer of its own: registered first, `rows` joins c to it
           "pairs": f"SELECT a.k, a.x, b.y FROM a JOIN b ON a.k = b.k WHERE a.x < 5 "
                    f"AND a.{WINDOW} AND b.{WINDOW}"}
DEFAULT = ("rows", "per_z")
LAYOUTS = {"static": None, "every 3 cycles": 3, "Zhu's trigger alone": 50}


def batch(rng: random.Random, minute: int, drifted: bool, scale: float,
          flip: str = "filters") -> dict:
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=minute)

    def t() -> dt.datetime:
        return start + dt.timedelta(seconds=rng.random() * 60)

    many, few = int(3000 * scale), int(300 * scale)
    if flip == "rates":
        small = int(150 * scale)
        return {"a": [(rng.randrange(3000), rng.randrange(5), t())
                      for _ in range(many if drifted else small)],
                "b": [(rng.randrange(3000), rng.randrange(30000), t()) for _ in range(many)],
                "c": [(rng.randrange(30000), rng.randrange(5), t())
                      for _ in range(small if drifted else many)]}
    return {"a": [(rng.randrange(3000), rng.randrange(5 if drifted else 100), t())
                  for _ in range(many)],
            "b": [(rng.randrange(3000), rng.randrange(300), t()) for _ in range(many)],
            "c": [(rng.randrange(300), rng.randrange(100 if drifted else 5), t())
                  for _ in range(few)]}


def run(dsn_arg, every: int | None, before: int, after: int, scale: float,
        queries: dict[str, str], flip: str = "filters"):
    with argus.connect(fresh_database(dsn_arg)) as db:
        for name, columns in (("a", {"k": "int", "x": "int"}), ("b", {"k": "int", "y": "int"}),
                              ("c", {"y": "int", "z": "int"})):
            db.create_stream(name, {**columns, "t": "timestamptz"}, time_column="t")
        db.configure(reoptimize_every=every, rerun_fallback=False)
        rng = random.Random(7)
        for stream, rows in batch(rng, 0, False, scale, flip).items():
            db.insert(stream, rows)
        db.run()
        for name, query in queries.items():
            db.register_query(name, query)
        times = []
        for minute in range(1, before + after + 1):
            for stream, rows in batch(rng, minute, minute > before, scale, flip).items():
                db.insert(stream, rows)
            started = time.perf_counter()
            db.run()
            times.append((time.perf_counter() - started) * 1000)
            db.conn.execute("VACUUM ANALYZE")
        exact = all(Counter(db.results(name)) == Counter(db.conn.execute(over_histories(
            db.conn.execute("SELECT canonical FROM argus_catalog.queries WHERE name = %s",
                            (name,)).fetchone()[0])).fetchall()) for name in queries)
        moved = db.conn.execute(
            "SELECT after_run - %s, query FROM argus_catalog.migrations WHERE migrated "
            "ORDER BY migration_id", (before + 1,)).fetchall()
        return times, moved, exact, _nodes(db.conn)


def _nodes(conn) -> list[tuple]:
    """The last 8 cycles per node: (node, kind, ms evaluating, ms flushing, rows in ±)."""
    return conn.execute(
        "SELECT r.node_id, n.kind, round(avg(r.ms)::numeric, 1), "
        "round(avg(coalesce(r.flush_ms, 0))::numeric, 1), "
        "round(avg(r.inserted)), round(avg(r.retracted)) "
        "FROM argus_catalog.run_nodes r JOIN argus_catalog.nodes n USING (node_id) "
        "WHERE r.run_id > (SELECT max(run_id) - 8 FROM argus_catalog.runs) "
        "GROUP BY 1, 2 ORDER BY 3 + 4 DESC").fetchall()


def main() -> None:
    args = arguments(__doc__, before=12, after=20, scale=1.0, only="", flip="filters",
                     nodes=False)
    if args.flip not in ("filters", "rates"):
        raise SystemExit(f"--flip is filters or rates, not {args.flip!r}")
    names = args.only.split(",") if args.only else DEFAULT
    if unknown := [n for n in names if n not in QUERIES]:
        raise SystemExit(f"--only names queries of {', '.join(QUERIES)}, not {unknown}")
    queries = {name: QUERIES[name] for name in names}
    print("| layout | before the drift | after (last 8) | every cycle after the drift, total | "
          "migrated (runs after the drift: query) | answers exact |")
    print("|---|---:|---:|---:|---|---|")
    for name, every in LAYOUTS.items():
        times, moved, exact, nodes = run(args.dsn, every, args.before, args.after,
                                         args.scale, queries, args.flip)
        print(f"| {name} | {statistics.median(times[args.before - 4:args.before]):,.0f} ms | "
              f"{statistics.median(times[-8:]):,.0f} ms | "
              f"{sum(times[args.before:]) / 1000:,.1f} s | "
              f"{', '.join(f'{c}: {q}' for c, q in moved) or '—'} | {exact} |", flush=True)
        if args.nodes:
            print("  " + "; ".join(f"n{n} {kind} {ms} + {flush} ms ({ins:+} / -{ret})"
                                   for n, kind, ms, flush, ins, ret in nodes), flush=True)


if __name__ == "__main__":
    main()
