"""The share of a source's rows a condition passes, as a network planned without a
server models it (network.memory): the share of a sample of the rows (of pairs of
samples, for a condition linking two instances) it holds on; else, or where a literal
cannot be read in Python, PostgreSQL's default share (an equality 0.005, a range 1/3,
anything else 1/2), an OR of literals the union of theirs, a conjunction the product."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import operator
from fractions import Fraction

from ..frontend.canon import atom_column
from ..mqo.order import FALLBACK_SHARE

SHARES = {"=": 0.005, "<": 1 / 3, "<=": 1 / 3, ">": 1 / 3, ">=": 1 / 3}  # (PostgreSQL's)
OTHER_SHARE = 0.5
# the rows (pairs, triples) of the samples read at most: all of two samples of 200 rows;
# 20 of each of three or more
COMBINATIONS = {1: 40_000, 2: 40_000}
MANY = 8_000
_OPS = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}


def share(clauses) -> float:
    """The share of rows a PredSet (a conjunction of ORs of literals) passes, by
    PostgreSQL's defaults."""
    return math.prod(1 - math.prod(1 - SHARES.get(lit.op, OTHER_SHARE) for lit in clause)
                     for clause in clauses)


def _number(value):
    return value.toordinal() if isinstance(value, dt.date) else Fraction(value)


def holds(literal, rows: dict[int, dict]) -> bool | None:
    """The literal on rows of its instances (instance -> column -> value); None where
    it cannot be read here (an opaque expression, a type Python does not order)."""
    columns = [atom_column(atom) for atom, _ in literal.terms]
    if None in columns:  # (an expression's atom: abs(w), n / 0 …)
        return None
    values = [rows[instance][column] for instance, column in columns]
    if literal.op in ("is null", "is not null"):
        return (values[0] is None) == (literal.op == "is null")
    if literal.op not in _OPS or literal.const is None:
        return None
    if None in values:
        return False
    kind, text = literal.const
    if (kind, text) == ("num", "0") and [c for _, c in literal.terms] == [1, -1] \
            and any(isinstance(v, str) for v in values):  # (a comparison of two texts)
        return _OPS[literal.op](values[0], values[1])
    try:
        if kind == "num":
            total = sum(c * _number(v) for (_, c), v in zip(literal.terms, values))
            return _OPS[literal.op](total, Fraction(text))
        if len(values) == 1 and literal.terms[0][1] == 1:
            const = dt.date.fromisoformat(text) if isinstance(values[0], dt.date) else text
            return _OPS[literal.op](values[0], const)
    except (TypeError, ValueError, OverflowError):  # (NaN, ±Infinity: not ordered here)
        pass
    return None


def sampled(clauses, samples: dict[int, list[dict]]) -> float | None:
    """The share of the samples' rows (instance -> rows; of their pairs, over two
    instances) the clauses hold on; None: a literal cannot be read here."""
    instances = sorted(samples)
    each = max(5, int(COMBINATIONS.get(len(instances), MANY) ** (1 / len(instances))))
    passed = total = 0
    for combination in itertools.product(*(samples[i][:each] for i in instances)):
        rows = dict(zip(instances, combination))
        results = [[holds(lit, rows) for lit in clause] for clause in clauses]
        if any(r is None for clause in results for r in clause):
            return None
        total += 1
        passed += all(any(clause) for clause in results)
    return passed / total if total else None


class SampleModel:
    """A network's rows as modelled without a server (network.memory asks these five):
    a source's rows given, the share of them a condition passes a sample's (else
    PostgreSQL's default), linked instances independent of each other's local
    conditions, and a hundredth of a source's rows new per cycle."""

    def __init__(self, samples: dict[str, list[dict]]) -> None:
        self.samples = samples  # stream -> rows (column -> value)
        self._shares: dict[tuple, float] = {}

    def estimate(self, net, source_id: int, instance: int, conds) -> float:
        """The source's rows its instance's conditions pass."""
        return net.source_rows(source_id) * self._share(
            net, {instance: source_id}, (c for cond in conds for c in cond.predset))

    def joined(self, net, block, linked: frozenset[int], conds) -> float:
        """The linked instances' rows joined by `conds`, each under its local ones."""
        linking = [c for cond in conds for c in cond.predset]  # (order._linked's)
        return math.prod(self.estimate(net, block.sources[i - 1], i,
                                       block.within(frozenset({i}))) for i in linked) \
            * self._share(net, {i: block.sources[i - 1] for i in linked}, linking)

    def inflow(self, net, source_id: int, rows: float) -> float:
        return FALLBACK_SHARE * rows

    def counted(self, net, sources: tuple[int, ...], predset) -> float:
        """A new node's rows: its block's sources' joined under its PredSet."""
        return math.prod(net.source_rows(s) for s in sources) * self._share(
            net, dict(enumerate(sources, 1)), predset)

    def share_of(self, net, parent, predicate: str | None, base, rows: float | None
                 ) -> float:
        """The share of `base`'s rows a new selection over `parent` passes: its rows
        (as counted) of base's; all, where they are not known."""
        return 1.0 if rows is None else rows / max(net.source_rows(base.id), 1.0)

    def _share(self, net, sources: dict[int, int], clauses) -> float:
        """The share of the rows of instances (instance -> source) the clauses pass."""
        clauses = frozenset(clauses)
        key = (frozenset(sources.items()), clauses)
        if key not in self._shares:
            samples = {i: self.samples.get(net.nodes[s].hist_ref[1])
                       for i, s in sources.items()}
            found = sampled(clauses, samples) if clauses and all(samples.values()) else None
            self._shares[key] = share(clauses) if found is None else found
        return self._shares[key]
