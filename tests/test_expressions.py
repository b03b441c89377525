"""Expressions read and written again by argus (sqlglot's parse, argus's canonical forms
and generated SQL) mean what PostgreSQL reads in them: each of tests/fixtures/
expressions.txt registered as a query, checked by the oracle against PostgreSQL over
rows with NULLs, negatives, NaN and infinities, registered before rows arrive and after
(backfilled)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from psycopg.types.json import Jsonb

EXPRESSIONS = [line for line in (Path(__file__).parent / "fixtures" / "expressions.txt")
               .read_text().splitlines() if line.strip() and not line.startswith("#")]
COLUMNS = {"id": "int", "k": "int", "j": "int", "x": "numeric", "f": "float8", "s": "text",
           "t": "timestamptz", "d": "date", "arr": "int[]", "js": "jsonb", "b": "boolean"}
UTC = dt.timezone.utc
ROWS = [
    (1, 1, 1, Decimal("1.5"), 0.2, "ab", dt.datetime(2024, 3, 10, 6, 30, tzinfo=UTC),
     dt.date(2024, 3, 10), [1, 2], Jsonb({"a": 1, "b": {"c": 2}}), True),
    (2, -7, 3, Decimal("-0.25"), -1.5, "a%", dt.datetime(2024, 11, 3, 5, 59, tzinfo=UTC),
     dt.date(2024, 1, 1), [3], Jsonb({"a": {"b": "x"}}), False),
    (3, None, None, None, None, None, None, None, None, None, None),
    (4, 0, -2, Decimal("NaN"), float("nan"), "Bz", dt.datetime(2023, 12, 31, 23, 0,
     tzinfo=UTC), dt.date(2023, 12, 31), [], Jsonb({"b": 1}), None),
    (5, 2147483000, 5, Decimal("123456.789"), float("inf"), "", dt.datetime(
        2024, 2, 29, 12, tzinfo=UTC), dt.date(2024, 2, 29), [None, 1], Jsonb([]), True),
]


@pytest.mark.parametrize("registered", ["before the rows", "after them"])
def test_each_expression_means_what_postgresql_reads(oracle, registered):
    oracle.create_stream("ev", COLUMNS, time_column="t")
    if registered == "after them":
        oracle.insert("ev", ROWS[:3])
        oracle.run()
    for number, expression in enumerate(EXPRESSIONS, 1):
        oracle.register(f"e{number}", f"SELECT id, {expression} AS v FROM ev")
    oracle.insert("ev", ROWS[3:] if registered == "after them" else ROWS)
    oracle.run()  # every answer against PostgreSQL's


def test_an_interval_column_compared_with_text_constants(oracle):
    """`iv = '1 day'`: PostgreSQL reads the text as an interval. Registration crashed on
    it (canon's interval constants are durations, the server's answer was text; found
    by a helper); two queries differing only in the constant share no selection."""
    oracle.create_stream("w", {"id": "int", "iv": "interval"})
    oracle.register("one_day", "SELECT id FROM w WHERE iv = '1 day'")
    oracle.register("two_days", "SELECT id FROM w WHERE iv = '2 days'")
    oracle.register("over_an_hour", "SELECT id FROM w WHERE iv > '01:00:00' AND iv <> '24:00:00'")
    oracle.insert("w", [(1, dt.timedelta(days=1)), (2, dt.timedelta(days=2)),
                        (3, dt.timedelta(hours=24)), (4, dt.timedelta(minutes=30)), (5, None)])
    oracle.run()


@pytest.mark.parametrize("query", [
    "SELECT p.id, r.id AS rid FROM p JOIN r ON r.ts > p.ts - interval '1 month' AND r.ts < p.ts",
    "SELECT id FROM p WHERE ts - interval '1 year' > d",
    "SELECT id FROM p WHERE d + interval '1 year' = ts",
    "SELECT p.id, r.id AS rid FROM p JOIN r ON p.tz + interval '-1 month' = r.tz",
    "SELECT id FROM p WHERE ts > d - interval '1.5 microseconds'"])
def test_times_compared_across_an_interval_of_no_fixed_length(oracle, query):
    """A month, a year or a fraction of a microsecond has no fixed length: such a
    comparison moves no term across (canon.linear), and registers (it failed with
    Python's AttributeError or ValueError; found by a helper)."""
    oracle.create_stream("p", {"id": "int", "d": "date", "ts": "timestamp",
                               "tz": "timestamptz"})
    oracle.create_stream("r", {"id": "int", "ts": "timestamp", "tz": "timestamptz"})
    oracle.register("q", query)
    oracle.insert("p", [(1, "2024-01-31", "2024-03-01", "2024-03-01 00:00+00"),
                        (2, "2023-02-28", "2024-02-28", "2024-03-31 00:00+00"),
                        (3, "2024-02-29", "2024-02-29 00:00:00.000001", "2024-02-29 00:00+00"),
                        (4, "2020-01-01", "2024-01-01", "2024-01-01 00:00+00")])
    oracle.insert("r", [(1, "2024-02-15", "2024-02-15 00:00+00"),
                        (2, "2024-02-01", "2024-02-29 00:00+00"),
                        (3, "2024-01-29", "2024-01-29 00:00+00")])
    oracle.run()
    assert oracle.db.count_results("q") > 0  # (rows that pass: the oracle compared them)
