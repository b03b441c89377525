"""Re-running as a query's evaluation (issue 25's per-query fallback): a query whose
one node re-runs it each cycle is exact, answer and changes (the oracle), whatever its
shape; it moves between incremental and re-run between two cycles and stays exact, and
other queries' nodes are untouched; the cost-based fallback decides by the query's own
nodes' time against a timed re-run, and leaves a query whose evaluation was asked for
alone."""

from __future__ import annotations

import random
import re

import pytest

from argus.adapt import fallback, records
from argus.errors import ArgusError, QueryError
from argus.mqo.replan import evaluation

from .oracle import bag

COLUMNS = {"id": "bigint", "k": "int", "g": "text", "v": "numeric(10,2)"}
QUERIES = {
    "groups": "SELECT k, count(*) AS n, sum(v) AS total, min(v) AS low FROM a GROUP BY k",
    "having": "SELECT g, avg(v) AS mean FROM a WHERE v > 10 GROUP BY g HAVING count(*) > 2",
    "join": "SELECT a.id, b.id AS other, a.g FROM a JOIN b ON a.k = b.k WHERE b.v < 60",
    "left": "SELECT a.id, b.g FROM a LEFT JOIN b ON a.id = b.id",
    "distinct": "SELECT DISTINCT g, k % 3 AS m FROM a",
    "except": "SELECT k FROM a EXCEPT ALL SELECT k FROM b",
    "not_exists": "SELECT id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    # literals that look like the placeholders of a re-run's stored text
    "literals": "SELECT a.id, a.g || '{s0}' AS g0, '\"argus_src_1\"' AS named FROM a "
                "JOIN b ON a.k = b.k WHERE b.g <> '{{s1}}'",
}


def rows(rng: random.Random, first: int, n: int) -> list[tuple]:
    return [(first + i, rng.randint(0, 6), rng.choice(["x", "y", "z", None]),
             rng.choice([None, round(rng.uniform(0, 100), 2)])) for i in range(n)]


@pytest.fixture
def two(oracle):
    oracle.create_stream("a", COLUMNS)
    oracle.create_stream("b", COLUMNS)
    return oracle


def load(oracle, rng: random.Random, cycle: int) -> None:
    oracle.insert("a", rows(rng, 1000 * cycle, rng.randint(0, 25)))
    if rng.random() < 0.6:
        oracle.insert("b", rows(rng, 1000 * cycle + 500, rng.randint(0, 8)))


@pytest.mark.parametrize("seed,locked", [(1, False), (2, True)])
def test_rerun_queries_are_exact(two, seed, locked):
    """`locked`: the cycles claim the inboxes whole and read the rows there."""
    rng = random.Random(seed)
    two.db.configure(truncate_inbox_bytes=1 if locked else 1 << 40)
    load(two, rng, 0)
    two.run()
    for name, query in QUERIES.items():
        two.register(name, query, evaluate="rerun")
        assert two.db.query(name).nodes[-1].kind == "rerun"
    for cycle in range(1, 10):
        load(two, rng, cycle)
        two.run()  # the oracle: answers, and the changes summed, after every cycle
    # a group whose count changes is retracted and inserted again, not duplicated
    assert two.db.conn.execute("SELECT count(*) FROM argus_results.groups").fetchone()[0] \
        == two.db.conn.execute("SELECT count(DISTINCT k) FROM argus_streams.a").fetchone()[0]


def test_moving_between_incremental_and_rerun_stays_exact(two):
    rng = random.Random(7)
    load(two, rng, 0)
    two.run()
    for name, query in QUERIES.items():
        two.register(name, query)
    two.register("join_too", QUERIES["join"])  # shares the join's nodes
    shared = set(two.db.query("join_too").nodes)
    for cycle in range(1, 12):
        load(two, rng, cycle)
        two.run()
        name = rng.choice(sorted(QUERIES))
        target = "incremental" if two.db.conn.execute(
            "SELECT evaluate FROM argus_catalog.queries WHERE name = %s",
            (name,)).fetchone()[0] == "rerun" else "rerun"
        before = bag(two.db.results(name)), bag(two.db.new_results(name))
        (decision,) = two.db.migrate([name], evaluate=target)
        assert decision.migrated, decision.why
        # answer and last changes read the same across the switch; later cycles exact
        assert (bag(two.db.results(name)), bag(two.db.new_results(name))) == before
        two.check()
    assert set(two.db.query("join_too").nodes) == shared
    assert two.db.conn.execute(
        "SELECT count(*) FROM argus_catalog.migrations WHERE migrated "
        "AND new_evaluate IS NOT NULL").fetchone()[0] == 11


def test_the_fallback_moves_a_query_it_predicts_cheaper_and_leaves_pinned_ones(
        two, monkeypatch):
    rng = random.Random(3)
    load(two, rng, 0)
    two.run()
    two.register("join", QUERIES["join"])
    two.register("pinned", QUERIES["left"])
    two.db.migrate(["pinned"], evaluate="rerun")
    two.db.migrate(["pinned"], evaluate="incremental")  # asked for: it sticks
    for cycle in range(1, 4):
        load(two, rng, cycle)
        two.run()
    # every re-run predicted free, every node worth re-planning: the decision's own
    # path, on the real network, made deterministic
    monkeypatch.setattr(fallback, "RERUN_OVERHEAD", 1e-9)
    monkeypatch.setattr(records, "WORTH_MS", 0.0)
    decisions = {d.query: d for d in two.db.migrate()}
    assert decisions["join"].migrated, decisions["join"].why
    assert "re-running it" in decisions["join"].why
    assert not decisions["pinned"].migrated
    evaluate = dict(two.db.conn.execute("SELECT name, evaluate FROM argus_catalog.queries"))
    assert evaluate == {"join": "rerun", "pinned": "incremental"}
    for cycle in range(4, 7):
        load(two, rng, cycle)
        two.run()
    two.db.configure(rerun_fallback="off")
    assert not any(d.migrated for d in two.db.migrate())


@pytest.mark.parametrize("current,own,rerun,before,expected", [
    ("incremental", 10.0, 5.0, None, "rerun"),
    ("incremental", 10.0, 7.5, None, None),  # saves 25%: not more than min_gain
    ("incremental", 10.0, None, None, None),
    ("rerun", 10.0, None, 5.0, "incremental"),
    ("rerun", 10.0, None, 8.0, None),
    ("rerun", 10.0, None, None, None),  # registered to be re-run, or never measured
])
def test_the_fallback_decision(current, own, rerun, before, expected):
    decided = evaluation(current, own, rerun, before, 0.3)
    assert (decided and decided[0]) == expected


def test_queries_reading_the_clock_are_not_rerun(oracle):
    oracle.create_stream("e", {"id": "bigint", "t": "timestamptz"}, time_column="t")
    with pytest.raises(QueryError, match="reads the stream clock"):
        oracle.db.register_query("recent", "SELECT id FROM e WHERE t > argus_now() - "
                                 "interval '1 hour'", evaluate="rerun")
    with pytest.raises(QueryError, match="evaluate must be one of"):
        oracle.db.register_query("odd", "SELECT id FROM e", evaluate="sometimes")
    assert not oracle.db.queries()


BEYOND = {  # SQL argus does not maintain incrementally: kept current by re-running it
    "first": "SELECT DISTINCT ON (g) g, id, v FROM a ORDER BY g, v DESC NULLS LAST, id",
    "latest": "SELECT id, v FROM a ORDER BY id DESC",
    "previous": "SELECT id FROM a WHERE v > (SELECT max(x.v) FROM a AS x WHERE x.id < a.id)",
    "both_exists": "SELECT id FROM a WHERE EXISTS (SELECT k FROM b WHERE b.k = a.k "
                   "INTERSECT SELECT k FROM b WHERE b.v > 90)",
    "pairs_not": "SELECT id FROM a WHERE v > 90 OR NOT (k, v) IN (SELECT k, v FROM b)",
    "hops": "WITH RECURSIVE h(k, d) AS (SELECT k, 0 FROM a UNION SELECT b.id::int, h.d + 1 FROM h "
            "JOIN b ON b.k = h.k WHERE h.d < 3) SELECT k, min(d) FROM h GROUP BY k",
    "spread": "SELECT a.id, u.x FROM a LEFT JOIN LATERAL unnest(ARRAY[a.k, a.v]) AS u(x) "
              "ON TRUE",
}


def test_sql_beyond_incremental_maintenance_is_kept_current_by_re_running(two):
    rng = random.Random(11)
    load(two, rng, 0)
    two.run()
    for name, query in BEYOND.items():
        with pytest.raises(QueryError, match="can be evaluated by re-running it instead"):
            two.db.register_query(name, query)
        two.register(name, query, evaluate="rerun")
    for cycle in range(1, 8):
        load(two, rng, cycle)
        two.run()  # the oracle, as for every query
    with pytest.raises(QueryError, match="ORDER BY"):  # and it stays re-run
        two.db.migrate(["latest"], evaluate="incremental")
    assert two.db.query("latest").nodes[-1].kind == "rerun"


def test_what_no_evaluation_can_keep_is_refused(two):
    for query, what in [("SELECT id, now() FROM a", "now()"),
                        ("SELECT id FROM a WHERE v > random()", "random()"),
                        ("SELECT id FROM a FOR UPDATE", "FOR UPDATE"),
                        ("SELECT id FROM nowhere", "unknown stream"),
                        ("SELECT nope FROM a ORDER BY id LIMIT 1", "nope")]:
        with pytest.raises(ArgusError, match=re.escape(what)):
            two.db.register_query("q", query, evaluate="rerun")
    assert not two.db.queries()

