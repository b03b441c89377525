"""Property-based differential tests: hypothesis generates selection queries and batch
sequences over small domains (NULLs included); after every cycle every registered
query's answer equals PostgreSQL's own answer over the same rows (the oracle)."""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, invariant, rule,
                                 run_state_machine_as_test)

from .oracle import Oracle

COLUMNS = {"k": "int", "v": "int", "t": "text", "b": "boolean"}
INT_COLUMNS = st.sampled_from(["k", "v"])
SMALL = st.integers(-3, 3)
COMPARE = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])

ATOMS = st.one_of(
    st.builds("{} {} {}".format, INT_COLUMNS, COMPARE, SMALL),
    st.builds("{} {} {}".format, SMALL, COMPARE, INT_COLUMNS),
    st.builds("{} {} {}".format, INT_COLUMNS, COMPARE, INT_COLUMNS),
    st.builds("{} IS NULL".format, st.sampled_from(list(COLUMNS))),
    st.builds("{} IS NOT NULL".format, st.sampled_from(list(COLUMNS))),
    st.builds("{} BETWEEN {} AND {}".format, INT_COLUMNS, SMALL, SMALL),
    st.builds(lambda c, xs: f"{c} IN ({', '.join(map(str, xs))})", INT_COLUMNS,
              st.lists(SMALL, min_size=1, max_size=3)),
    st.builds("t LIKE '{}%'".format, st.sampled_from(["a", "b", "ab", ""])),
    st.builds("k + v {} {}".format, COMPARE, SMALL),
    st.builds("coalesce(v, {}) = k".format, SMALL),
    st.builds("{} % 2 = 0".format, INT_COLUMNS),
    st.builds("CASE WHEN k > {} THEN v ELSE -v END > 0".format, SMALL),
    st.sampled_from(["b", "NOT b", "b IS TRUE", "upper(t) = 'AB'", "length(t) > 1"]),
)
PREDICATES = st.recursive(
    ATOMS,
    lambda inner: st.one_of(st.builds("({} AND {})".format, inner, inner),
                            st.builds("({} OR {})".format, inner, inner),
                            st.builds("NOT ({})".format, inner)),
    max_leaves=5)
OUTPUTS = st.lists(st.sampled_from(["k", "v", "t", "b", "k + v AS kv", "upper(t) AS ut",
                                    "v * 2 AS v2", "coalesce(t, '?') AS tt", "k > v AS kgt",
                                    "1 AS one"]),
                   min_size=1, max_size=4, unique=True)
ROWS = st.lists(st.tuples(st.one_of(st.none(), SMALL), st.one_of(st.none(), SMALL),
                          st.sampled_from([None, "a", "b", "ab", "ba"]),
                          st.one_of(st.none(), st.booleans())), max_size=12)

EXAMPLES = int(os.environ.get("ARGUS_PROPERTY_EXAMPLES", "80"))


def test_random_selections_match_postgres_after_every_cycle(db):
    ids = itertools.count()

    class Selections(RuleBasedStateMachine):
        queries = Bundle("queries")

        def __init__(self) -> None:
            super().__init__()
            self.oracle = Oracle(db)
            self.stream = f"s{next(ids)}"
            self.oracle.create_stream(self.stream, COLUMNS)

        @rule(target=queries, outputs=OUTPUTS, where=st.one_of(st.none(), PREDICATES))
        def register(self, outputs, where):
            name = f"{self.stream}_q{next(ids)}"
            sql_text = f"SELECT {', '.join(outputs)} FROM {self.stream}"
            if where:
                sql_text += f" WHERE {where}"
            self.oracle.register(name, sql_text)  # checks the backfilled answer
            return name

        @rule(rows=ROWS)
        def insert(self, rows):
            self.oracle.insert(self.stream, rows)

        @rule()
        def cycle(self):
            self.oracle.run()  # checks every query

        @rule(name=consumes(queries))
        def drop(self, name):
            self.oracle.unregister(name)

        @invariant()
        def catalog_has_one_view_pair_per_query(self):
            views = db.conn.execute(
                "SELECT count(*) FROM pg_views WHERE schemaname IN "
                "('argus_results', 'argus_changes')").fetchone()[0]
            assert views == 2 * len(db.queries())

        def teardown(self):
            for info in db.queries():
                db.unregister_query(info.name)
            db.drop_stream(self.stream)

    run_state_machine_as_test(Selections, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=15, deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
