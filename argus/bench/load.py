"""Benchmark: loading with Spark over JDBC (exactly once, through a staging table)
against PostgreSQL's own COPY of the same rows, in one run.

Usage: python -m argus.bench.load [--dsn DSN] [--rows N] [--batch-size N] [--partitions N]
"""

from __future__ import annotations

import time


import argus
from argus.bench.common import arguments, fresh_database
from argus import spark as argus_spark
from argus.bench.datagen import TRANSFER_COLUMNS
from argus.bench.sparkgen import transfers


def main() -> None:
    args = arguments(__doc__, rows=500_000, batch_size=10_000, partitions=2)
    dsn = fresh_database(args.dsn)
    spark = argus_spark.session()
    df = transfers(spark, args.rows).coalesce(args.partitions).cache()
    rows = df.collect()  # the same rows, for COPY
    with argus.connect(dsn) as db:
        db.create_stream("transfers", TRANSFER_COLUMNS)
        started = time.perf_counter()
        result = argus_spark.load(df, "transfers", dsn, load_id="bench-spark",
                                  batch_size=args.batch_size)
        spark_s = time.perf_counter() - started
        db.conn.execute("TRUNCATE argus_inbox.transfers")
        started = time.perf_counter()
        db.insert("transfers", [tuple(r) for r in rows])
        copy_s = time.perf_counter() - started
    n = result.rows
    print(f"{n:,} transfer rows, {args.partitions} Spark partitions, JDBC batch size "
          f"{args.batch_size:,}")
    print(f"  Spark JDBC load (exactly once): {spark_s:6.2f} s  {n / spark_s:10,.0f} rows/s")
    print(f"  COPY from Python (argus insert): {copy_s:6.2f} s  {n / copy_s:10,.0f} rows/s")
    print(f"  Spark / COPY throughput: {copy_s / spark_s:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
