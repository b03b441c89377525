"""Benchmark: bounded state under windows. A windowed 3-way join of transfers (each side
within the last hour of event time, each link within 20 minutes of the previous), run for
200 cycles with purging on and off; prints retained rows and cycle time after 10 and
after 200 cycles, in one run on the same server.

Usage: python -m argus.bench.windows [--dsn DSN] [--cycles N] [--batch N]
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import time


import argus
from argus.bench.common import arguments, fresh_database

QUERY = """
    SELECT a.id AS first, b.id AS second, c.id AS third
      FROM (SELECT * FROM tr WHERE t > argus_now() - interval '1 hour') a
      JOIN (SELECT * FROM tr WHERE t > argus_now() - interval '1 hour') b ON b.snd = a.rcv
      JOIN (SELECT * FROM tr WHERE t > argus_now() - interval '1 hour') c ON c.snd = b.rcv
     WHERE b.t BETWEEN a.t AND a.t + interval '20 minutes'
       AND c.t BETWEEN b.t AND b.t + interval '20 minutes'"""


def run(dsn: str | None, purge: bool, cycles: int, batch: int) -> dict[int, tuple[int, float]]:
    rng = random.Random(11)
    marks: dict[int, tuple[int, float]] = {}
    times: list[float] = []
    with argus.connect(fresh_database(dsn)) as db:
        db.conn.execute("UPDATE argus_catalog.settings SET purge = %s", (purge,))
        db.create_stream("tr", {"id": "bigint", "snd": "int", "rcv": "int", "t": "timestamp"},
                         time_column="t")
        db.register_query("chains", QUERY)
        start, next_id = dt.datetime(2024, 1, 1), 0
        for cycle in range(1, cycles + 1):
            now = start + dt.timedelta(minutes=cycle)
            rows = []
            for _ in range(batch):
                next_id += 1
                rows.append((next_id, rng.randint(0, 9_999), rng.randint(0, 9_999),
                             now - dt.timedelta(seconds=rng.randint(0, 59))))
            db.insert("tr", rows)
            started = time.perf_counter()
            db.run()
            times.append(time.perf_counter() - started)
            if cycle in (10, cycles):
                (retained,) = db.conn.execute(
                    "SELECT sum(rows) FROM argus.nodes").fetchone()
                marks[cycle] = (retained, statistics.median(times[-5:]) * 1000)
    return marks


def main() -> None:
    args = arguments(__doc__, cycles=200, batch=200)
    print(f"windowed 3-way join, {args.batch} rows per cycle, 1 minute of event time per "
          f"cycle, 1-hour windows; retained rows = all nodes' histories (stream included)")
    for purge in (True, False):
        marks = run(args.dsn, purge, args.cycles, args.batch)
        for cycle, (retained, ms) in sorted(marks.items()):
            state = "on " if purge else "off"
            print(f"  purge {state}  after {cycle:4d} cycles: {retained:>10,} rows retained, "
                  f"cycle {ms:7.1f} ms (median of last 5)")


if __name__ == "__main__":
    main()
