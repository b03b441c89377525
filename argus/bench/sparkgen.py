"""Data generators as Spark jobs: the transfer stream of the demo and the benchmarks,
produced in parallel by Spark instead of row by row in Python."""

from __future__ import annotations

import datetime as dt

START_DATE = "2024-01-01"
FOLLOW_UP_IDS = 1_000_000_000  # follow-up transfers' ids: the original's plus this


def transfers(spark, rows: int, first_id: int = 1, accounts: int = 2000,
              per_day: int = 1000, seed: int = 42, chain_share: float = 0.25):
    """A FedWire-like batch: lognormal amounts; a share of the transfers over 100,000
    is followed, 1 to 25 days later, by one of at least half the amount from the
    receiver to another account (the chains ARGUS's queries look for). Dates run from
    START_DATE, `per_day` ids a day, and end by today however high the ids go (more a
    day then): a cycle quarantines event times ahead of the server's clock."""
    from pyspark.sql import functions as F

    today = dt.date.today()
    days = max((today - dt.date.fromisoformat(START_DATE)).days, 1)
    per_day = max(per_day, -(-(first_id + rows - 1) // days))

    def account(salt: int):
        return F.format_string("acct%05d", (F.rand(seed + salt) * accounts).cast("int"))

    base = spark.range(first_id, first_id + rows).select(
        F.col("id").alias("tran_id"),
        F.date_add(F.lit(START_DATE).cast("date"),
                   ((F.col("id") - 1) / per_day).cast("int")).alias("tran_date"),
        account(1).alias("sender"), account(2).alias("receiver"),
        F.least(F.round(F.exp(F.randn(seed + 3) * 2.2 + 8), 2), F.lit(9e11))
        .cast("decimal(14,2)").alias("amount"))
    follow = (base.where((F.col("amount") > 100000) & (F.rand(seed + 4) < chain_share))
              .select((F.col("tran_id") + FOLLOW_UP_IDS).alias("tran_id"),
                      F.least(F.date_add("tran_date", (F.rand(seed + 5) * 24 + 1).cast("int")),
                              F.lit(today.isoformat()).cast("date")).alias("tran_date"),
                      F.col("receiver").alias("sender"), account(6).alias("receiver"),
                      (F.col("amount") * (F.rand(seed + 7) * 0.5 + 0.5))
                      .cast("decimal(14,2)").alias("amount")))
    return base.unionByName(follow)
