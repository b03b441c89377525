"""Property-based differential tests of the whole algebra.

Hypothesis builds random queries from a recursive grammar — selections (some of them
temporal filters against argus_now(): sliding, tumbling and delayed windows), inner /
left / semi / anti joins (self-joins included), aggregates with HAVING, DISTINCT, UNION /
INTERSECT / EXCEPT (and ALL), each usable as a derived table inside the others — and
random batch sequences over small key domains with NULLs, with event times that advance
and sometimes arrive late. After every cycle every registered query's answer must
equal PostgreSQL's own answer over the same rows (with argus_now() at the cycle's
clock), and the reported changes must add up to it (the oracle).
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import random

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, multiple, rule,
                                 run_state_machine_as_test)

from argus import QueryError

from .oracle import LAYOUT_SETTINGS, Oracle

STREAMS = {"r": {"k": "int", "g": "int", "v": "int"}, "s": {"k": "int", "w": "int"}}
START = dt.datetime(2024, 1, 1)
WINDOWS = st.sampled_from([
    "{a}.t > argus_now() - interval '{m} minutes'",
    "{a}.t >= date_trunc('hour', argus_now())",
    "{a}.t <= argus_now() - interval '{m} minutes'"])
SMALL = st.integers(-2, 3)
NULLABLE = st.one_of(st.none(), SMALL)
ROWS = {"r": st.lists(st.tuples(NULLABLE, st.integers(0, 2), NULLABLE), max_size=6),
        "s": st.lists(st.tuples(NULLABLE, NULLABLE), max_size=6)}
AGES = st.integers(-45, 5)  # minutes before (late) or after the current time
COMPARE = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])
AGGREGATES = ["count(*)", "count({x})", "sum({x})", "min({x})", "max({x})", "avg({x})",
              "count(DISTINCT {x})", "bool_or({x} > 0)::int", "var_pop({x})", "stddev({x})",
              "count(*) FILTER (WHERE {p})", "sum({x}) FILTER (WHERE {p})",
              "count(DISTINCT {x}) FILTER (WHERE {p})", "max({x}) FILTER (WHERE {p})"]
EXAMPLES = int(os.environ.get("ARGUS_ALGEBRA_EXAMPLES", "160"))
LAYOUTS = st.sampled_from(LAYOUT_SETTINGS)  # the layout of the nodes registered next
_names = itertools.count()


def alias() -> str:
    return f"q{next(_names)}"


@st.composite
def predicate(draw, prefix: str, columns: list[str]) -> str:
    def atom() -> str:
        col = f"{prefix}.{draw(st.sampled_from(columns))}"
        kind = draw(st.integers(0, 3))
        if kind == 0:
            return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
        if kind == 1 and len(columns) > 1:
            other = f"{prefix}.{draw(st.sampled_from(columns))}"
            return f"{col} {draw(COMPARE)} {other}"
        return f"{col} {draw(COMPARE)} {draw(SMALL)}"

    text = atom()
    for _ in range(draw(st.integers(0, 2))):
        text = f"({text} {draw(st.sampled_from(['AND', 'OR']))} {atom()})"
    return text


def project(prefix: str, columns: list[str]) -> str:
    return ", ".join(f"{prefix}.{c} AS c{i}" for i, c in enumerate(columns, 1))


def renamed(n: int) -> list[str]:
    return [f"c{i}" for i in range(1, n + 1)]


@st.composite
def relation(draw, depth: int):
    """(SQL of a query, its output column names)."""
    kinds = ["base"] if depth == 0 else [
        "base", "filter", "join", "left", "right", "full", "semi", "anti", "in", "not_in",
        "scalar", "exists_or", "aggregate", "global", "distinct", "setop", "chain", "window",
        "top"]
    kind = draw(st.sampled_from(kinds))
    if kind == "base":
        stream = draw(st.sampled_from(sorted(STREAMS)))
        columns = list(STREAMS[stream])
        a = alias()
        conditions = [draw(predicate(a, columns))] if draw(st.booleans()) else []
        if draw(st.integers(0, 3)) == 0:
            conditions.append(draw(WINDOWS).format(a=a, m=draw(st.sampled_from([10, 30, 60]))))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return f"SELECT {', '.join(f'{a}.{c}' for c in columns)} FROM {stream} {a}{where}", columns

    left, lcols = draw(relation(depth - 1))
    a = alias()
    if kind == "filter":
        keep = draw(st.lists(st.sampled_from(lcols), min_size=1, max_size=3, unique=True))
        extra = f", {a}.{keep[0]} + 1 AS c{len(keep) + 1}" if draw(st.booleans()) else ""
        sql = (f"SELECT {project(a, keep)}{extra} FROM ({left}) {a} "
               f"WHERE {draw(predicate(a, lcols))}")
        return sql, renamed(len(keep) + bool(extra))
    if kind == "aggregate" or kind == "global":
        x = draw(st.sampled_from(lcols))
        aggs = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=3, unique=True))
        calls = [agg.format(x=f"{a}.{x}", p=draw(predicate(a, lcols)) if "{p}" in agg else "")
                 for agg in aggs]
        if kind == "global":
            sql = (f"SELECT {', '.join(f'{c} AS c{i}' for i, c in enumerate(calls, 1))} "
                   f"FROM ({left}) {a}")
            return sql, renamed(len(calls))
        key = draw(st.sampled_from(lcols))
        having = f" HAVING count(*) {draw(COMPARE)} {draw(st.integers(0, 2))}" \
            if draw(st.booleans()) else ""
        sql = (f"SELECT {a}.{key} AS c1, "
               f"{', '.join(f'{c} AS c{i}' for i, c in enumerate(calls, 2))} "
               f"FROM ({left}) {a} GROUP BY {a}.{key}{having}")
        return sql, renamed(len(calls) + 1)
    if kind in ("window", "top"):  # ordered by every column: the same rows, however tied
        keys = draw(st.lists(st.sampled_from(lcols), max_size=2, unique=True))
        over = (f"OVER ({'PARTITION BY ' + ', '.join(f'{a}.{k}' for k in keys) if keys else ''}"
                f" ORDER BY {', '.join(f'{a}.{c} DESC NULLS LAST' for c in lcols)})")
        func = draw(st.sampled_from(["row_number()", "rank()", "dense_rank()",
                                     f"sum({a}.{lcols[-1]})", f"lag({a}.{lcols[0]})",
                                     "count(*)"]))
        sql = f"SELECT {project(a, lcols)}, {func} {over} AS c0 FROM ({left}) {a}"
        if kind == "top":
            sql = (f"SELECT {', '.join(f'w.c{i}' for i in [*range(1, len(lcols) + 1), 0])} "
                   f"FROM ({sql}) w WHERE w.c0 <= {draw(st.integers(1, 3))}")
        return sql, renamed(len(lcols)) + ["c0"]
    if kind == "distinct":
        keep = draw(st.lists(st.sampled_from(lcols), min_size=1, max_size=2, unique=True))
        return f"SELECT DISTINCT {project(a, keep)} FROM ({left}) {a}", renamed(len(keep))

    right, rcols = draw(relation(depth - 1))
    b = alias()
    if kind == "chain":  # a 3-way join written with commas, its conditions in any order
        third, tcols = draw(relation(depth - 1))
        c = alias()
        conjuncts = [f"{b}.{draw(st.sampled_from(rcols))} = {a}.{draw(st.sampled_from(lcols))}",
                     f"{c}.{draw(st.sampled_from(tcols))} = {b}.{draw(st.sampled_from(rcols))}"]
        if draw(st.booleans()):
            conjuncts.append(f"{c}.{draw(st.sampled_from(tcols))} {draw(COMPARE)} "
                             f"{a}.{draw(st.sampled_from(lcols))}")
        if draw(st.booleans()):
            conjuncts.append(draw(predicate(c, tcols)))
        if draw(st.booleans()):  # an OR across two of the relations
            conjuncts.append(f"({a}.{draw(st.sampled_from(lcols))} {draw(COMPARE)} "
                             f"{draw(SMALL)} OR {c}.{draw(st.sampled_from(tcols))} "
                             f"{draw(COMPARE)} {draw(SMALL)})")
        conjuncts = draw(st.permutations(conjuncts))
        order = draw(st.permutations([f"({left}) {a}", f"({right}) {b}", f"({third}) {c}"]))
        columns = (f"{a}.{lcols[0]} AS c1, {b}.{rcols[0]} AS c2, {c}.{tcols[-1]} AS c3")
        return (f"SELECT {columns} FROM {', '.join(order)} WHERE {' AND '.join(conjuncts)}",
                renamed(3))
    lk, rk = draw(st.sampled_from(lcols)), draw(st.sampled_from(rcols))
    if kind in ("join", "left", "right", "full"):
        condition = f"{b}.{rk} = {a}.{lk}"
        if draw(st.booleans()):
            condition += (f" AND {b}.{draw(st.sampled_from(rcols))} "
                          f"{draw(COMPARE)} {a}.{draw(st.sampled_from(lcols))} + {draw(SMALL)}")
        if draw(st.booleans()):  # an OR across both sides
            condition += (f" AND ({a}.{draw(st.sampled_from(lcols))} {draw(COMPARE)} "
                          f"{draw(SMALL)} OR {b}.{draw(st.sampled_from(rcols))} "
                          f"{draw(COMPARE)} {draw(SMALL)})")
        joined = {"join": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN",
                  "full": "FULL JOIN"}[kind]
        where = f" WHERE {draw(predicate(a, lcols))}" if draw(st.booleans()) else ""
        columns = ", ".join([f"{a}.{c} AS c{i}" for i, c in enumerate(lcols, 1)]
                            + [f"{b}.{c} AS c{i}" for i, c in enumerate(rcols, len(lcols) + 1)])
        sql = f"SELECT {columns} FROM ({left}) {a} {joined} ({right}) {b} ON {condition}{where}"
        return sql, renamed(len(lcols) + len(rcols))
    if kind in ("semi", "anti"):
        negation = "NOT " if kind == "anti" else ""
        extra = f" AND {draw(predicate(b, rcols))}" if draw(st.booleans()) else ""
        sql = (f"SELECT {project(a, lcols)} FROM ({left}) {a} WHERE {negation}EXISTS "
               f"(SELECT 1 FROM ({right}) {b} WHERE {b}.{rk} = {a}.{lk}{extra})")
        return sql, renamed(len(lcols))
    if kind == "exists_or":
        negation = draw(st.sampled_from(["", "NOT "]))
        sql = (f"SELECT {project(a, lcols)} FROM ({left}) {a} WHERE {draw(predicate(a, lcols))}"
               f" OR {negation}EXISTS (SELECT 1 FROM ({right}) {b} WHERE {b}.{rk} = {a}.{lk})")
        return sql, renamed(len(lcols))
    if kind in ("in", "not_in"):
        negation = "NOT " if kind == "not_in" else ""
        tested, joined = f"{a}.{lk}", ""
        how = draw(st.sampled_from(["", "JOIN", "LEFT JOIN", "padded"]))
        if how:  # another relation joined: the IN may run below the join, on its side
            third, tcols = draw(relation(depth - 1))
            c, tk = alias(), draw(st.sampled_from(tcols))
            joined = (f" {'LEFT JOIN' if how == 'padded' else how} ({third}) {c} "
                      f"ON {c}.{tk} = {a}.{draw(st.sampled_from(lcols))}")
            tested = f"{c}.{tk}" if how == "padded" else tested
        sql = (f"SELECT {project(a, lcols)} FROM ({left}) {a}{joined} "
               f"WHERE {tested} {negation}IN (SELECT {b}.{rk} FROM ({right}) {b})")
        return sql, renamed(len(lcols))
    if kind == "scalar":  # compared with an aggregate of the other side, correlated or not
        agg = draw(st.sampled_from(AGGREGATES[:6])).format(x=f"{b}.{rk}")
        link = (f" WHERE {b}.{draw(st.sampled_from(rcols))} = {a}.{draw(st.sampled_from(lcols))}"
                if draw(st.booleans()) else "")
        sql = (f"SELECT {project(a, lcols)}, (SELECT {agg} FROM ({right}) {b}{link}) AS c0 "
               f"FROM ({left}) {a} WHERE {a}.{lk} {draw(COMPARE)} "
               f"(SELECT {agg} FROM ({right}) {b}{link})")
        return sql, renamed(len(lcols)) + ["c0"]
    # set operation on one column of each side
    op = draw(st.sampled_from(["UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL",
                               "EXCEPT", "EXCEPT ALL"]))
    sql = f"SELECT {a}.{lk} AS c1 FROM ({left}) {a} {op} SELECT {b}.{rk} FROM ({right}) {b}"
    return sql, ["c1"]


QUERIES = st.integers(1, 2).flatmap(lambda depth: relation(depth))


class Batches(RuleBasedStateMachine):
    """Streams r and s of the grammar's (named with a prefix of each run's), random
    batches into them with event times that advance and sometimes arrive late, and
    cycles with the claim locked or not; every answer checked by the oracle after each.
    Subclasses register the queries."""

    def __init__(self, db, stats: dict[str, int]) -> None:
        super().__init__()
        self.db, self.stats = db, stats
        self.oracle, self.prefix = Oracle(db), alias()
        self.minutes = 0  # event time advances with each batch
        for name, columns in STREAMS.items():
            self.oracle.create_stream(f"{self.prefix}_{name}", {**columns, "t": "timestamp"},
                                      time_column="t")

    def _sql(self, query: str) -> str:
        for name in STREAMS:  # the grammar names streams r and s
            query = query.replace(f" FROM {name} ", f" FROM {self.prefix}_{name} ")
        return query

    @rule(stream=st.sampled_from(sorted(STREAMS)), data=st.data())
    def insert(self, stream, data):
        self.minutes += 7
        rows = [(*row, START + dt.timedelta(minutes=self.minutes + data.draw(AGES)))
                for row in data.draw(ROWS[stream])]
        self.oracle.insert(f"{self.prefix}_{stream}", rows)

    mixed = False  # each signed node applies or rebuilds at random, cycle by cycle

    @rule(locked=st.booleans(), seed=st.integers(0, 1 << 16))
    def cycle(self, locked, seed):
        # locked: the claim takes the inboxes whole and the streams' children read
        # the claimed rows in place; else it moves them row by row
        self.db.configure(truncate_inbox_bytes=1 if locked else 1 << 40)
        if self.mixed:
            coin = random.Random(seed)
            self.oracle.rig_maintenance(lambda node_id: coin.random() < 0.5)
        self.oracle.run()
        self.stats["cycles"] += 1

    def teardown(self):
        for info in self.db.queries():
            self.db.unregister_query(info.name)
        for name in STREAMS:
            self.db.drop_stream(f"{self.prefix}_{name}")


class Registering(Batches):
    """Batches, and the grammar's random queries registered (those refused because a
    window purged rows they need are counted) and layouts changed between steps."""
    queries = Bundle("queries")

    @rule(target=queries, query=QUERIES)
    def register(self, query):
        name = f"{self.prefix}_{alias()}"
        try:
            self.oracle.register(name, self._sql(query[0]))
        except QueryError as exc:  # windowed queries purged what this one needs
            assert "were purged" in str(exc), exc
            self.stats["refused"] += 1
            return multiple()
        self.stats["queries"] += 1
        return name

    @rule(layout=LAYOUTS)
    def layout(self, layout):
        self.db.configure(**layout)


def machine_settings(examples: int, steps: int) -> settings:
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


@pytest.mark.parametrize("maintenance", ["auto", "rebuild", "mixed"])
def test_random_queries_match_postgres_after_every_cycle(db, maintenance):
    """Also with every signed node rebuilt from its parents each cycle instead of
    applying its changes (the path `auto` takes when rebuilding is cheaper), and with
    each node's choice at random, cycle by cycle."""
    db.configure(maintenance="auto" if maintenance == "mixed" else maintenance)
    stats = {"queries": 0, "cycles": 0, "refused": 0}

    class Algebra(Registering):
        mixed = maintenance == "mixed"

        def __init__(self) -> None:
            super().__init__(db, stats)

        @rule(name=consumes(Registering.queries))
        def drop(self, name):
            self.oracle.unregister(name)

    run_state_machine_as_test(Algebra, settings=machine_settings(
        EXAMPLES if maintenance == "auto" else EXAMPLES // 3, steps=12))
    print(f"\nalgebra property test: {stats['queries']} generated queries, "
          f"{stats['cycles']} cycles checked, {stats['refused']} refused after purges")
