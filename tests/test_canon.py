"""Golden cases of canonicalization and subsumption (fixtures/canonical.txt,
fixtures/subsumption.txt), and the renumbering of STAs."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from argus.canon import canonicalize, predset_text, relation, sargable

from .fixtures import cases

TYPES = {"a": "integer", "amount": "numeric(14,2)", "d": "date", "f": "double precision",
         "s": "text", "sender": "text", "receiver": "text", "t": "timestamp with time zone",
         "ts": "timestamp without time zone"}


def predset(text: str):
    """A condition over r1, r2 as a PredSet over instances i1, i2."""
    def instance(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            alias = {"r1": "i1", "r2": "i2", "": "i1"}[node.table]
            return exp.column(node.name, table=alias, quoted=True)
        return node

    tree = sqlglot.parse_one(text, read="postgres").transform(instance)
    types = {f'"i{i}"."{c}"': t for i in (1, 2) for c, t in TYPES.items()}
    return canonicalize(tree, types.get)


@pytest.mark.parametrize("case", cases("canonical.txt"), ids=lambda c: c["title"])
def test_canonical_form(case):
    assert predset_text(predset(case["input"])) == case["canonical"]


@pytest.mark.parametrize("case", cases("subsumption.txt"), ids=lambda c: c["title"])
def test_subsumption(case):
    assert relation(predset(case["p"]), predset(case["q"])) == case["relation"]


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
