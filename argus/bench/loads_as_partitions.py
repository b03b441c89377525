"""Issue 51's "each stream row written once", one design measured: each load's rows in a
table of their own, attached to the stream's history as a partition at the claim
(written once), against today's inbox appended to the history (written twice).

Plain PostgreSQL, outside argus, on Nexmark bids with the four indexes the 21 Nexmark
queries give the bid history: per batch, the load (COPY), the claim (today: INSERT into
the history and TRUNCATE of the inbox; the design: its indexes built and ATTACH
PARTITION, validated by a CHECK constraint, no scan), then what readers of the history
pay with the partitions the batches left: index probes as a join's nested loop makes
them, `= ANY` of the keys, and a whole scan. Medians; ms.

Usage: python -m argus.bench.loads_as_partitions [--dsn DSN] [--events 150000]
       [--batch 5000] [--batches 6]
"""

from __future__ import annotations

import statistics
import time

import psycopg

from argus.bench.nexmark import COLUMNS, NexmarkGenerator
from argus.bench.common import arguments, fresh_database

TYPES = ", ".join(f"{c} {t.replace(' NOT NULL', '')}" for c, t in COLUMNS["bid"].items())
INDEXES = [("auction", "date_time"), ("price",), ("bidder", "date_time"), ("auction", "bidder")]


def indexed(conn: psycopg.Connection, table: str) -> None:
    for columns in INDEXES:
        conn.execute(f"CREATE INDEX ON {table} ({', '.join(columns)})")


def copy(conn: psycopg.Connection, table: str, rows: list[tuple]) -> float:
    started = time.perf_counter()
    with conn.cursor().copy(f"COPY {table} ({', '.join(COLUMNS['bid'])}) FROM STDIN") as out:
        for row in rows:
            out.write_row(row)
    return (time.perf_counter() - started) * 1000


def timed(conn: psycopg.Connection, statement: str, params=(), repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        conn.execute(statement, params).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def readers(conn: psycopg.Connection, table: str, keys: list[int]) -> tuple[float, ...]:
    conn.execute("SET enable_hashjoin = off; SET enable_mergejoin = off")  # (probes)
    probes = timed(conn, f"SELECT count(*) FROM unnest(%s::bigint[]) k "
                         f"JOIN {table} h ON h.auction = k", (keys,))
    conn.execute("RESET enable_hashjoin; RESET enable_mergejoin")
    return (probes, timed(conn, f"SELECT count(*), sum(price) FROM {table} "
                                f"WHERE auction = ANY(%s)", (keys,)),
            timed(conn, f"SELECT count(*), max(price) FROM {table}", repeat=5))


def main() -> None:
    args = arguments(__doc__, events=150_000, batch=5_000, batches=6)
    bids = []
    generator = NexmarkGenerator(1)
    for _ in range(0, args.events, 50_000):
        bids += generator.batch(50_000)["bid"]
    old, batches = bids[:-args.batch * args.batches], bids[-args.batch * args.batches:]
    with psycopg.connect(fresh_database(args.dsn), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE today ({TYPES})")
        conn.execute(f"CREATE TABLE inbox ({TYPES})")
        conn.execute(f"CREATE TABLE parts ({TYPES}, claim bigint NOT NULL DEFAULT 0) "
                     "PARTITION BY RANGE (claim)")
        conn.execute("CREATE TABLE parts_0 PARTITION OF parts FOR VALUES FROM (0) TO (1)")
        copy(conn, "today", old)
        copy(conn, "parts", old)
        indexed(conn, "today")
        indexed(conn, "parts")
        for statement in ("VACUUM ANALYZE today", "VACUUM ANALYZE parts", "CHECKPOINT"):
            conn.execute(statement)
        t = {k: [] for k in ("load today", "claim today", "load parts", "claim parts")}
        for k in range(1, args.batches + 1):
            rows = batches[(k - 1) * args.batch:k * args.batch]
            t["load today"].append(copy(conn, "inbox", rows))
            started = time.perf_counter()
            with conn.transaction():
                conn.execute("INSERT INTO today SELECT * FROM inbox")
                conn.execute("TRUNCATE inbox")
            t["claim today"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            conn.execute(f"CREATE TABLE parts_{k} ({TYPES}, claim bigint NOT NULL "
                         f"DEFAULT {k} CHECK (claim = {k}))")
            t["load parts"].append(copy(conn, f"parts_{k}", rows)
                                   + (time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            with conn.transaction():
                conn.execute(f"ALTER TABLE parts ATTACH PARTITION parts_{k} "
                             f"FOR VALUES FROM ({k}) TO ({k + 1})")
            t["claim parts"].append((time.perf_counter() - started) * 1000)
        for statement in ("VACUUM ANALYZE today", "VACUUM ANALYZE parts"):
            conn.execute(statement)
        keys = sorted({row[0] for row in batches[-args.batch:]})
        today, parts = readers(conn, "today", keys), readers(conn, "parts", keys)
    med = {k: statistics.median(v) for k, v in t.items()}
    print(f"{len(old):,} bids of history, {args.batches} batches of {args.batch:,}; "
          f"readers over {args.batches + 1} partitions, {len(keys):,} auction keys\n")
    print("| | written twice (today) | a partition per load | ratio |")
    print("|---|---:|---:|---:|")
    rows = [("load (COPY)", med["load today"], med["load parts"]),
            ("claim", med["claim today"], med["claim parts"]),
            ("readers: index probes, one per key", today[0], parts[0]),
            ("readers: `auction = ANY(keys)`", today[1], parts[1]),
            ("readers: a whole scan", today[2], parts[2])]
    for name, a, b in rows:
        print(f"| {name} | {a:,.1f} | {b:,.1f} | {b / a:,.2f}× |")


if __name__ == "__main__":
    main()
