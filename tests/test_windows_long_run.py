"""A long run of a windowed workload: 200 cycles of a 3-way windowed join and windowed
aggregates. Every answer stays exact (the oracle, with argus_now() at each cycle's
clock), and the state argus keeps stays bounded by rate × window, while a query without
a window on another stream keeps everything."""

from __future__ import annotations

import datetime as dt
import random

from psycopg import sql

from argus.names import stream_history

from .oracle import Oracle

CYCLES = 200
PER_CYCLE = 12  # rows per stream per cycle
MINUTES_PER_CYCLE = 10
WINDOW_MINUTES = 60


def test_windowed_state_stays_bounded_and_exact(db):
    rng = random.Random(5)
    oracle = Oracle(db)
    oracle.create_stream("tr", {"id": "int", "snd": "int", "rcv": "int", "amount": "int",
                                "t": "timestamp"}, time_column="t")
    oracle.create_stream("audit", {"id": "int", "t": "timestamp"}, time_column="t")
    window = f"t > argus_now() - interval '{WINDOW_MINUTES} minutes'"
    oracle.register("chains", f"""
        SELECT a.id AS first, b.id AS second, c.id AS third
          FROM (SELECT * FROM tr WHERE {window}) a
          JOIN (SELECT * FROM tr WHERE {window}) b ON b.snd = a.rcv
          JOIN (SELECT * FROM tr WHERE {window}) c ON c.snd = b.rcv
         WHERE b.t BETWEEN a.t AND a.t + interval '20 minutes'
           AND c.t BETWEEN b.t AND b.t + interval '20 minutes'""")
    oracle.register("per_sender", f"""
        SELECT snd, count(*) AS n, max(amount) AS top FROM tr WHERE {window} GROUP BY snd""")
    oracle.register("busy", f"""
        SELECT snd FROM tr WHERE {window} GROUP BY snd HAVING count(*) > 2""")
    oracle.register("audit_all", "SELECT count(*) AS n FROM audit")

    start = dt.datetime(2024, 1, 1)
    next_id = 0
    kept = []
    for cycle in range(CYCLES):
        now = start + dt.timedelta(minutes=MINUTES_PER_CYCLE * cycle)
        rows = []
        for _ in range(PER_CYCLE):
            next_id += 1
            late = rng.random() < 0.1  # some rows arrive late
            t = now - dt.timedelta(minutes=rng.randint(0, 90 if late else MINUTES_PER_CYCLE))
            rows.append((next_id, rng.randint(0, 9), rng.randint(0, 9), rng.randint(1, 100), t))
        oracle.insert("tr", rows)
        oracle.insert("audit", [(next_id, now)])
        oracle.run()  # checks every query against the SQL run from scratch
        kept.append(db.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
            stream_history("tr"))).fetchone()[0])

    # the stream keeps at most the rows of one window (plus one cycle of slack)
    bound = PER_CYCLE * (WINDOW_MINUTES // MINUTES_PER_CYCLE + 1)
    assert max(kept[20:]) <= bound, (max(kept[20:]), bound)
    print(f"\nretained rows of the windowed stream: max {max(kept[20:])}, bound {bound}")
    total_node_rows = db.conn.execute(
        "SELECT sum(rows) FROM argus.nodes WHERE kind <> 'stream'").fetchone()[0]
    assert total_node_rows < 20 * bound  # every node's state is bounded too
    # the stream without a windowed reader keeps everything
    assert db.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
        stream_history("audit"))).fetchone()[0] == CYCLES
    late = db.conn.execute("SELECT sum(late) FROM argus_catalog.run_streams "
                           "WHERE stream = 'tr'").fetchone()[0]
    assert late > 0  # late rows were claimed and counted, not dropped
