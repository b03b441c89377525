"""Property-based test of sharing: hypothesis interleaves registrations and drops of
queries from families that overlap (thresholds, alias orders, day windows, grouping
granularities, unions) with batches and cycles, under each sharing strategy; after
every registration and every cycle each query equals its SQL run from scratch."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, invariant, rule,
                                 run_state_machine_as_test)

import argus

from .oracle import LAYOUT_SETTINGS, Oracle
from .test_property_algebra import LAYOUTS

COLUMNS = {"id": "int", "k": "int", "v": "int", "w": "int", "t": "text"}
C = st.integers(-2, 3)
WINDOW = st.integers(0, 3)

SELECTIONS = st.one_of(
    st.builds("SELECT id, v FROM tr WHERE v > {}".format, C),
    st.builds("SELECT id, t FROM tr WHERE {} < v".format, C),
    st.builds("SELECT id, k FROM tr WHERE v - {} > 0 AND k <> {}".format, C, C),
    st.builds("SELECT k, w FROM tr WHERE v >= {} AND (t = 'a' OR w > {})".format, C, C),
    st.builds("SELECT id FROM tr WHERE k IN ({}, {})".format, C, C),
)
JOINS = st.one_of(
    st.builds("SELECT a.id, b.id AS b FROM tr a JOIN tr b ON b.k = a.v "
              "WHERE a.w > {} AND b.w BETWEEN a.w AND a.w + {}".format, C, WINDOW),
    st.builds("SELECT y.v, x.id FROM tr y, tr x WHERE y.k = x.v AND x.w > {} "
              "AND y.w - x.w <= {} AND y.w >= x.w".format, C, WINDOW),
    st.builds("SELECT a.id, c.t FROM tr a, tr b, tr c WHERE b.k = a.v AND c.k = b.v "
              "AND a.w > {} AND b.w BETWEEN a.w AND a.w + {} "
              "AND c.w BETWEEN b.w AND b.w + {}".format, C, WINDOW, WINDOW),
    st.builds("SELECT a.id FROM tr a, tr b, tr c WHERE b.k = a.v AND c.k = b.v "
              "AND c.w > {}".format, C),
)
AGGREGATES = st.one_of(
    st.builds("SELECT k, v, count(*) AS n, sum(w) AS s, max(w) AS hi FROM tr "
              "GROUP BY k, v".format),
    st.builds("SELECT k, count(*) AS n, max(w) AS hi, avg(w) AS mean FROM tr GROUP BY k "
              "HAVING count(*) > {}".format, st.integers(0, 3)),
    st.builds("SELECT k, sum(w) AS s, min(w) AS lo, stddev(w) AS sd FROM tr "
              "WHERE v > {} GROUP BY k".format, C),
    st.builds("SELECT count(*) AS n, sum(w) AS s, bool_or(w > {}) AS any FROM tr".format, C),
    st.builds("SELECT v, count(DISTINCT k) AS kinds, count(w) AS n FROM tr GROUP BY v".format),
)
SETOPS = st.one_of(
    st.builds("SELECT id FROM tr WHERE v > {} UNION ALL SELECT id FROM tr WHERE w < {}".format,
              C, C),
    st.builds("SELECT id FROM tr WHERE w < {} UNION ALL SELECT id FROM tr WHERE v > {}".format,
              C, C),
    st.builds("SELECT k FROM tr WHERE v > {} UNION SELECT v FROM tr".format, C),
    st.builds("SELECT k FROM tr INTERSECT SELECT v FROM tr WHERE w > {}".format, C),
)
QUERIES = st.one_of(SELECTIONS, JOINS, AGGREGATES, SETOPS)
ROWS = st.lists(st.tuples(st.integers(0, 1000), st.one_of(st.none(), C), C, C,
                          st.sampled_from([None, "a", "b"])), max_size=10)

EXAMPLES = int(os.environ.get("ARGUS_PROPERTY_EXAMPLES", "80")) // 2


@pytest.mark.parametrize("strategy", ["selection", "match-plan", "none"])
def test_sharing_strategies_keep_every_answer_exact(fresh_dsn, strategy):
    ids = itertools.count()
    db = argus.connect(fresh_dsn, sharing=strategy)
    checked = {"queries": 0, "cycles": 0, "shared": 0}

    class Sharing(RuleBasedStateMachine):
        queries = Bundle("queries")

        def __init__(self) -> None:
            super().__init__()
            db.configure(**LAYOUT_SETTINGS[1])  # each example starts from the defaults
            self.oracle = Oracle(db)
            self.oracle.create_stream("tr", COLUMNS)

        @rule(target=queries, sql_text=QUERIES)
        def register(self, sql_text):
            name = f"q{next(ids)}"
            info = self.oracle.register(name, sql_text)  # checks the backfilled answer
            checked["queries"] += 1
            checked["shared"] += any(not n.created and n.kind != "stream" for n in info.nodes)
            return name

        @rule(rows=ROWS)
        def insert(self, rows):
            self.oracle.insert("tr", rows)

        @rule()
        def cycle(self):
            self.oracle.run()  # checks every query
            checked["cycles"] += 1

        @rule(name=consumes(queries))
        def drop(self, name):
            self.oracle.unregister(name)
            self.oracle.check()

        @rule(layout=LAYOUTS)
        def layout(self, layout):
            db.configure(**layout)

        @invariant()
        def every_node_is_needed(self):
            orphans = db.conn.execute(
                "SELECT count(*) FROM argus_catalog.nodes n WHERE kind <> 'stream' AND NOT "
                "EXISTS (SELECT 1 FROM argus_catalog.query_nodes q "
                "WHERE q.node_id = n.node_id)").fetchone()[0]
            assert orphans == 0

        def teardown(self):
            for info in db.queries():
                db.unregister_query(info.name)
            db.drop_stream("tr")
            db.conn.execute("DROP SCHEMA oracle_mirror CASCADE")

    try:
        run_state_machine_as_test(Sharing, settings=settings(
            max_examples=EXAMPLES, stateful_step_count=20, deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
    finally:
        db.close()
    print(f"\n{strategy}: {checked['queries']} queries registered ({checked['shared']} "
          f"sharing nodes), {checked['cycles']} cycles checked")
    assert checked["queries"] and checked["cycles"]
