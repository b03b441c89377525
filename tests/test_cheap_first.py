"""Cheap tests first (argus.frontend.cheap_first): a selection's OR and AND arms ordered
by what they cost a row where none can fail, so that PostgreSQL, which evaluates them in
the order written, runs a regular expression only for the rows a cheaper arm left
undecided; and kept as written where one may fail, whose order could then decide which
rows raise an error."""

from __future__ import annotations

import psycopg
import pytest

from argus.frontend.cheap_first import cheap_first

TYPES = {("t1", "url"): "text", ("t1", "channel"): "text", ("t1", "price"): "bigint",
         ("t1", "b"): "integer"}
REGEX = "SUBSTRING(\"t1\".\"url\" FROM '(?:&|^|\\?)channel_id=([^&]*)') IS NOT NULL"
CHANNEL = "LOWER(\"t1\".\"channel\") IN ('apple', 'google')"

CASES = [  # (condition, as ordered)
    (f"({REGEX} OR {CHANNEL})", f"({CHANNEL} OR {REGEX})"),
    (f"({CHANNEL} OR {REGEX})", f"({CHANNEL} OR {REGEX})"),  # (as it is: nothing moves)
    ("(\"t1\".\"url\" ~ 'a+b' OR \"t1\".\"price\" > 5 OR \"t1\".\"url\" LIKE '%x')",
     "(\"t1\".\"price\" > 5 OR \"t1\".\"url\" LIKE '%x' OR \"t1\".\"url\" ~ 'a+b')"),
    (f"(\"t1\".\"price\" > 5 OR {REGEX}) AND (\"t1\".\"url\" LIKE '%x%')",
     f"(\"t1\".\"url\" LIKE '%x%') AND (\"t1\".\"price\" > 5 OR {REGEX})"),
    (f"(\"t1\".\"b\" = 2 AND ({REGEX} OR \"t1\".\"b\" = 1)) OR {CHANNEL}",
     f"{CHANNEL} OR (\"t1\".\"b\" = 2 AND (\"t1\".\"b\" = 1 OR {REGEX}))"),
    (f"NOT ({REGEX} OR \"t1\".\"b\" = 1)", f"NOT (\"t1\".\"b\" = 1 OR {REGEX})"),
    # an arm that may fail (bigint arithmetic overflows; division by zero): as written
    (f"({REGEX} OR \"t1\".\"price\" * 2 > 5)", f"({REGEX} OR \"t1\".\"price\" * 2 > 5)"),
    (f"({REGEX} OR 10 / \"t1\".\"b\" = 1)", f"({REGEX} OR 10 / \"t1\".\"b\" = 1)"),
    (None, None),
]


@pytest.mark.parametrize("condition, ordered", CASES)
def test_arms_that_cannot_fail_are_ordered_cheapest_first(condition, ordered):
    assert cheap_first(condition, TYPES) == ordered


BIDS = {"auction": "bigint", "channel": "text", "url": "text", "price": "bigint",
        "b": "int", "at": "timestamptz"}
ROWS = [(1, "Apple", "https://x/?channel_id=7", 10, 1, "2024-01-01 00:00+00"),
        (2, "Other", "https://x/?q=1&channel_id=9&r=2", 20, 0, "2024-01-01 00:00+00"),
        (3, "Other", "https://x/?q=1", 30, 2, "2024-01-01 00:01+00"),
        (4, None, None, None, None, "2024-01-01 00:02+00"),
        (5, "GOOGLE", "channel_id=", 9223372036854775807, 5, "2024-01-01 00:03+00")]


def _predicates(db) -> list[str]:
    return [p for (p,) in db.conn.execute(
        "SELECT definition->>'predicate' FROM argus_catalog.nodes WHERE kind = 'select' "
        "AND definition->>'predicate' IS NOT NULL ORDER BY node_id")]


def test_a_selection_runs_its_cheap_arm_first_and_answers_the_same(oracle):
    """q21's shape: the node's predicate names the channel test first; answers equal
    PostgreSQL's from scratch (the oracle), rows loaded before and after."""
    oracle.create_stream("bid", BIDS, time_column="at")
    oracle.insert("bid", ROWS[:2])
    oracle.run()
    oracle.register("q21", "SELECT auction, price FROM bid WHERE "
                           "substring(url FROM '(?:&|^|\\?)channel_id=([^&]*)') IS NOT NULL "
                           "OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')")
    oracle.insert("bid", ROWS[2:])
    oracle.run()
    (predicate,) = _predicates(oracle.db)
    assert predicate.index("LOWER(") < predicate.index("SUBSTRING("), predicate


def test_an_arm_that_may_fail_keeps_its_place(oracle):
    """`price * 2` overflows on the last row: whether the cycle fails must not depend
    on argus's order of the arms. The arm that may fail stays last, as written, so the
    regular expression's match on that row decides it before the overflow is reached,
    as it does in PostgreSQL from scratch."""
    oracle.create_stream("bid", BIDS, time_column="at")
    oracle.register("q", "SELECT auction FROM bid WHERE "
                         "url ~ 'channel_id=' OR price * 2 > 100")
    oracle.insert("bid", ROWS)
    oracle.run()
    (predicate,) = _predicates(oracle.db)
    assert predicate.index("~") < predicate.index("* 2"), predicate
    with pytest.raises(psycopg.errors.NumericValueOutOfRange):  # (the arms the other way)
        oracle.db.conn.execute("SELECT auction FROM argus_streams.bid "
                               "WHERE price * 2 > 100 OR url ~ 'channel_id='")
