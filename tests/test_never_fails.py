"""What argus takes for an expression that cannot fail on a row (argus.failures.never_fails, with
its columns' types): such an expression is evaluated where an error would reach a
reader (a view of a stream, a query's output with no check in the cycle), so the claim
is tried on PostgreSQL over each type's extremes, in time zones either side of UTC. The
expressions it refuses fail on some of those rows: each rule is needed."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from argus.failures import never_fails

COLUMNS = {"s": "smallint", "i": "integer", "b": "bigint", "n": "numeric",
           "f": "double precision", "t": "timestamp without time zone",
           "tz": "timestamp with time zone", "d": "date", "x": "text", "y": "bytea",
           "j": "json[]"}
TYPES = {("t1", c): t for c, t in COLUMNS.items()}
ROWS = [
    "32767, 2147483647, 9223372036854775807, 1e131071, 1.7e308, "
    "'294276-12-31 23:59:59.999999', '294276-12-31 23:59:59.999999+00', '5874897-12-31', "
    "'a/b/c/d/e', '\\xff', ARRAY['1']::json[]",
    "-32768, -2147483648, -9223372036854775808, -1e131071, -1.7e308, "
    "'4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC', '4713-01-01 BC', '', '', "
    "ARRAY['1']::json[]",
    "0, 0, 0, 'NaN', 'NaN', 'infinity', 'infinity', 'infinity', '/', 'a', ARRAY['1']::json[]",
    "1, 1, 1, 0.5, 'Infinity', '-infinity', '-infinity', '-infinity', '(', NULL, "
    "ARRAY['1']::json[]",
    "2, 2, 2, 2, 2, '294276-12-31 23:00', NULL, NULL, 'y', NULL, ARRAY['1']::json[]",
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL",
]
ZONES = ["UTC", "Pacific/Kiritimati", "Etc/GMT+12", "America/New_York"]

NEVER_FAIL = [
    '0.908 * "t1"."b"',
    '0.5 * -5 * "t1"."b" + 0.25 * "t1"."i" - "t1"."s" * 1.5',
    'CAST("t1"."b" AS DECIMAL) * 3',
    '-(0.5 * "t1"."i")',
    '0.908 * "t1"."b" > 1000000 AND 0.908 * "t1"."b" < 50000000',
    "TO_CHAR(\"t1\".\"t\", 'YYYY-MM-DD HH24:MI:SS.US TZ OF IW Q J Day RM')",
    "TO_CHAR(\"t1\".\"tz\", 'YYYY-MM-DD HH:MI TZ TZH:TZM')",
    'CASE WHEN EXTRACT(HOUR FROM "t1"."t") BETWEEN 8 AND 18 THEN \'day\' '
    'WHEN EXTRACT(HOUR FROM "t1"."tz") <= 6 THEN \'night\' ELSE \'other\' END',
    'EXTRACT(EPOCH FROM "t1"."d") > 0 OR EXTRACT(ISODOW FROM "t1"."d") = 1',
    'EXTRACT(WEEK FROM "t1"."tz")',
    "DATE_TRUNC('hour', \"t1\".\"t\")",
    "DATE_TRUNC('week', \"t1\".\"t\")",
    "SPLIT_PART(\"t1\".\"x\", '/', 4)",
    "LOWER(\"t1\".\"x\") = 'apple' OR UPPER(\"t1\".\"x\") = 'B'",
    "COALESCE(NULLIF(LENGTH(\"t1\".\"x\"), 0), 1) > 0",
    'GREATEST("t1"."i", "t1"."s") <= LEAST("t1"."b", 5)',
    'CAST("t1"."f" AS TEXT)',
    "SUBSTRING(\"t1\".\"x\" FROM '(?:&|^|\\?)channel_id=([^&]*)') IS NOT NULL",
    "\"t1\".\"x\" ~ '^a/' OR \"t1\".\"x\" ~* 'B+'",
    'SUBSTRING("t1"."x" FROM 2 FOR 3)',
    'COALESCE("t1"."b", 0) > 1 AND LEAST("t1"."b", "t1"."i", 5) < 9',
    "CASE WHEN \"t1\".\"b\" > 0 THEN 'x' ELSE LOWER(\"t1\".\"x\") END",
    'NULLIF("t1"."t", "t1"."t") IS NULL OR "t1"."d" < "t1"."t" OR "t1"."tz" > "t1"."t"',
]

MAY_FAIL = [
    '"t1"."b" * 2',  # bigint arithmetic overflows
    '("t1"."b" + 1) * 0.5',  # so does its part in bigint
    '-"t1"."i"',  # -(-2^31)
    '10.5 * "t1"."f"',  # float: 10.5 × 1.7e308 is out of range
    '10.5 * "t1"."n"',  # a numeric as long as the type allows
    "1e131060 * \"t1\".\"b\"",  # a constant that leaves no room
    "TO_CHAR(\"t1\".\"d\", 'YYYY')",  # a date past timestamp's range
    "DATE_TRUNC('year', \"t1\".\"t\")",  # below the first timestamp
    "DATE_TRUNC('day', \"t1\".\"tz\")",  # truncated in the session's time zone
    'EXTRACT(HOUR FROM "t1"."d")',  # no hours in a date
    "SPLIT_PART(\"t1\".\"x\", '/', 0)",
    '"t1"."t" + INTERVAL \'10 SECONDS\'',
    '"t1"."b" / "t1"."i"',  # by zero
    "SUBSTRING(\"t1\".\"x\" FROM \"t1\".\"i\" FOR \"t1\".\"s\")",  # a negative length
    '"t1"."x" ~ "t1"."x"',  # a pattern of the row's: '' compiles, '(' does not
    # found by a helper: values converted to one type (a date past timestamp's range, a
    # numeric past float's, a timestamp past timestamptz's in New York), records compared
    # column by column, a bytea decoded, a truncation in a time zone, flags of the row's
    'GREATEST("t1"."d", "t1"."t")',
    'CASE WHEN "t1"."b" > 0 THEN "t1"."d" ELSE "t1"."t" END',
    'COALESCE("t1"."tz", "t1"."t")',
    'COALESCE("t1"."n", "t1"."f")',
    '"t1"."n" = "t1"."f"',
    'GREATEST(("t1"."b", "t1"."x"), (0, "t1"."t"))',
    "LENGTH(\"t1\".\"y\", 'UTF8')",
    "DATE_TRUNC('day', \"t1\".\"t\", 'UTC')",
    "REGEXP_LIKE(\"t1\".\"x\", 'a', \"t1\".\"x\")",
    # arrays of a type without equality, compared element by element (a helper)
    '"t1"."j" = "t1"."j"',
    '"t1"."j" IN ("t1"."j")',
    'NULLIF("t1"."j", "t1"."j")',
]


@pytest.fixture(scope="module")
def extremes(admin_dsn):
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE t1 ({})".format(", ".join(
            f"{c} {t}" for c, t in COLUMNS.items())))
        for row in ROWS:
            conn.execute(f"INSERT INTO t1 VALUES ({row})")
        yield conn


def _fails(conn: psycopg.Connection, expression: str) -> str | None:
    """The error evaluating the expression over every row raises in some zone."""
    for zone in ZONES:
        conn.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
        try:
            conn.execute(sql.SQL("SELECT count(v) FROM (SELECT {} AS v FROM t1) AS x").format(
                sql.SQL(expression)))
        except psycopg.Error as exc:  # (a unit a type has not: 0A000)
            return f"{zone}: {exc.diag.message_primary}"
    return None


@pytest.mark.parametrize("expression", NEVER_FAIL)
def test_what_it_takes_for_safe_fails_on_no_row(extremes, expression):
    assert never_fails(expression, types=TYPES)
    assert _fails(extremes, expression) is None


@pytest.mark.parametrize("expression", MAY_FAIL)
def test_what_it_refuses_fails_on_some_row(extremes, expression):
    assert not never_fails(expression, types=TYPES)
    assert _fails(extremes, expression) is not None


def test_without_types_only_columns_constants_and_logic():
    assert not never_fails('0.908 * "t1"."b"')
    assert not never_fails("LOWER(\"t1\".\"x\") = 'apple'")
    assert never_fails('"t1"."x" = \'apple\' AND "t1"."b" IS NOT NULL')


def test_a_query_whose_outputs_cannot_fail_has_no_check_in_the_cycle(oracle):
    oracle.create_stream("bids", {"b": "bigint", "t": "timestamp", "x": "text"})
    oracle.register("safe", "SELECT b, 0.908 * b AS price, to_char(t, 'HH24:MI') AS at, "
                            "split_part(x, '/', 2) AS part FROM bids")
    oracle.register("risky", "SELECT b * 2 AS double FROM bids")
    checks = dict(oracle.db.conn.execute(
        "SELECT name, output_check IS NOT NULL FROM argus_catalog.queries"))
    assert checks == {"safe": False, "risky": True}
    oracle.insert("bids", [(9223372036854775807, "2024-01-01 10:00", "a/b"), (1, None, None)])
    report = oracle.run()
    assert list(report.failed) == ["risky"]
    assert sorted(oracle.db.results("safe"), key=str) == sorted(oracle.db.conn.execute(
        "SELECT b, 0.908 * b, to_char(t, 'HH24:MI'), split_part(x, '/', 2) "
        "FROM argus_streams.bids").fetchall(), key=str)


def test_a_regular_expression_that_does_not_compile_is_refused_at_registration(oracle):
    import argus

    oracle.create_stream("hits", {"url": "text"})
    with pytest.raises(argus.QueryError, match=r"regular expression '\(a' in .*parenthes"):
        oracle.register("bad", "SELECT substring(url FROM '(a') AS part FROM hits")
    with pytest.raises(argus.QueryError, match="regular expression"):
        oracle.register("bad", "SELECT url FROM hits WHERE url ~* 'a{2,1}'")
    assert not oracle.db.conn.execute("SELECT count(*) FROM argus_catalog.queries").fetchone()[0]


def test_an_output_that_fails_on_a_row_already_held_is_refused(oracle):
    """No cycle checks the rows a query's answer holds when it is registered: an output
    that fails on one would fail every read of the answer (as the query run from scratch
    fails). Refused, naming the error; a row that comes later isolates the query."""
    import argus

    oracle.create_stream("s", {"a": "bigint", "d": "date"})
    oracle.insert("s", [(0, "5874897-12-31")])
    oracle.run()
    for query, error in [("SELECT 1 / a AS q FROM s", "division by zero"),
                         ("SELECT date_part('year', d) AS y FROM s", "out of range")]:
        with pytest.raises(argus.QueryError, match=f"fail on a row it would answer now: .*{error}"):
            oracle.register("q", query)
    oracle.register("later", "SELECT 10 / (a + 1) AS q FROM s")
    oracle.insert("s", [(-1, None)])
    assert list(oracle.run().failed) == ["later"]
