"""Golden cases of canonicalization and subsumption (fixtures/canonical.txt,
fixtures/subsumption.txt), and the renumbering of STAs. Constants are read by
PostgreSQL (argus.frontend.constants), as registration reads them."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from argus.frontend.canon import (canonicalize, exact_atoms, predset_text, relation,
                                  sargable)
from argus.frontend.constants import Constants
from argus.errors import UnsupportedQueryError
from argus.mqo.blocks import Cond, implied_bounds

from .fixtures import cases

TYPES = {"a": "integer", "amount": "numeric(14,2)", "d": "date", "f": "double precision",
         "s": "text", "sender": "text", "receiver": "text", "t": "timestamp with time zone",
         "ts": "timestamp without time zone"}


TYPED = {f'"i{i}"."{c}"': t for i in (1, 2, 3) for c, t in TYPES.items()}  # by atom
# the dates and times taken for streams' time columns, which are never infinite
FINITE = frozenset(a for a, t in TYPED.items() if t.startswith(("date", "timestamp")))


def predset(text: str, conn=None):
    """A condition over r1, r2 as a PredSet over instances i1, i2; with a connection,
    its constants read by PostgreSQL."""
    def instance(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            alias = {"r1": "i1", "r2": "i2", "r3": "i3", "": "i1"}[node.table]
            return exp.column(node.name, table=alias, quoted=True)
        return node

    tree = sqlglot.parse_one(text, read="postgres").transform(instance)
    types = TYPED
    if conn is None:
        return canonicalize(tree, types.get, finite=FINITE)
    constants = Constants(conn)
    canonicalize(tree, types.get, resolve=constants, finite=FINITE)
    constants.fetch()
    return canonicalize(tree, types.get, resolve=constants, finite=FINITE)


@pytest.fixture(scope="module")
def conn(admin_dsn):
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as connection:
        yield connection


@pytest.mark.parametrize("case", cases("canonical.txt"), ids=lambda c: c["title"])
def test_canonical_form(case, conn):
    assert predset_text(predset(case["input"], conn)) == case["canonical"]


@pytest.mark.parametrize("case", cases("subsumption.txt"), ids=lambda c: c["title"])
def test_subsumption(case, conn):
    assert relation(predset(case["p"], conn), predset(case["q"], conn),
                    exact_atoms(TYPED.get, FINITE)) == case["relation"]


def test_a_band_implies_a_wider_one_only_over_times_that_cannot_be_infinite(conn):
    """(both dates 'infinity': r2.d >= r1.d is true and r2.d > r1.d - 5 false)"""
    p, q = predset("r2.d BETWEEN r1.d AND r1.d + 5", conn), predset("r2.d > r1.d - 5", conn)
    assert relation(p, q, exact_atoms(TYPED.get, FINITE)) == "implies"
    assert relation(p, q, exact_atoms(TYPED.get)) == "none"


@pytest.mark.parametrize("case", cases("transitivity.txt"), ids=lambda c: c["title"])
def test_transitivity(case, conn):
    conds = [Cond(frozenset({clause}), exp.true(), frozenset()) for clause
             in predset(case["condition"], conn)]
    implied = sorted(lit.text for cond in implied_bounds(conds, TYPED.get)
                     for (lit,) in cond.predset)
    assert (" AND ".join(implied) or "none") == case["implied"]


def test_unresolved_constants_are_only_equal_to_themselves():
    """Without PostgreSQL, a string constant implies nothing: '2024-1-5' may be the day
    '2024-01-05' is."""
    assert relation(predset("d = '2024-01-05'"), predset("d <> '2024-1-5'")) == "none"
    assert relation(predset("s = 'x'"), predset("s <> 'y'")) == "none"


@pytest.mark.parametrize("text", ["d > 'today'", "t <= 'now'::timestamptz",
                                  "ts > TIMESTAMP ' Tomorrow'"])
def test_literals_of_the_current_time_are_refused(text, conn):
    with pytest.raises(UnsupportedQueryError, match="current time"):
        predset(text, conn)


def test_renumbering_stas_renormalizes():
    (clause,) = predset("r2.amount >= r1.amount * 0.5")
    (literal,) = clause
    swapped = literal.mapped({1: 2, 2: 1})
    (expected,) = next(iter(predset("r1.amount >= r2.amount * 0.5")))
    assert swapped == expected
    assert swapped.shape == literal.shape  # the index prefilter ignores STAs


def test_canonicalization_off_keeps_conjuncts_as_written():
    tree = sqlglot.parse_one('"i1"."a" > 10 AND 10 < "i1"."a"', read="postgres")
    assert len(canonicalize(tree, {}.get, enabled=False)) == 2
    assert len(canonicalize(tree, {'"i1"."a"': "integer"}.get)) == 1


@pytest.mark.parametrize("case", cases("sargable.txt"), ids=lambda c: c["title"])
def test_sargable_join_windows(case):
    types = {f'"t{i}"."{c}"': t for i in (1, 2) for c, t in
             {**TYPES, "t": "timestamp with time zone"}.items()}
    assert sargable(case["input"], types.get) == case["sargable"]


def test_a_difference_of_dates_that_may_be_infinite_keeps_its_own_literal():
    """d - e > 5 fails where both are 'infinity' and d > e + 5 answers: sharing one node
    failed a query PostgreSQL answers (found by a helper); of a stream's time columns,
    never infinite, they are one literal."""
    def text(condition: str, finite: frozenset[str]) -> str:
        tree = sqlglot.parse_one(condition, read="postgres").transform(
            lambda n: exp.column(n.name, table="i1", quoted=True)
            if isinstance(n, exp.Column) else n)
        return predset_text(canonicalize(tree, {'"i1"."d"': "date", '"i1"."e"': "date"}.get,
                                         finite=finite))

    both = frozenset({'"i1"."d"', '"i1"."e"'})
    assert text("d - e > 5", both) == text("d > e + 5", both)
    assert text("d - e > 5", frozenset()) != text("d > e + 5", frozenset())
    assert text("d + 5 > e", frozenset()) == text("d > e - 5", frozenset())
