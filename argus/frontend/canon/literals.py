"""Literals, clauses and PredSets (a condition in CNF), their text, and the atoms
(columns of instances, `"i1"."amount"`) they are written over."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from sqlglot import exp

from ...trees import DIALECT, unparen, tree_of
from .values import _const_text, _linear_text, _parse_const, _scale, _store


MAX_CLAUSES = 32  # CNF of a condition beyond this is kept as one opaque literal

COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">",
               exp.GTE: ">="}
FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
NEGATE = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<",
          "is null": "is not null", "is not null": "is null"}

TypeOf = Callable[[str], str | None]  # column atom -> PostgreSQL type, None if unknown

# (lhs over instance atoms, constant, the atoms' types) -> (const_type, canonical text) as
# PostgreSQL compares them, or None when that cannot be known.
Resolve = Callable[[exp.Expr, exp.Expr, "TypeOf"], "tuple[str, str] | None"]


@dataclass(frozen=True, order=True)
class Literal:
    """`Σ coef·atom op const`; op 'is null' / 'is not null' have no constant; op 'true'
    is an opaque boolean expression (its one atom)."""

    terms: tuple[tuple[str, Fraction], ...]
    op: str
    const: tuple[str, str] | None  # (const_type, canonical text); the value is `value`

    @property
    def value(self):
        return None if self.const is None else _parse_const(self.const)

    @property
    def text(self) -> str:
        if self.op == "true":
            return self.terms[0][0]
        lhs = _linear_text(self.terms)
        if self.const is None:
            return f"{lhs} {self.op.upper()}"
        if self.const == ("num", "0") and len(self.terms) == 2 and self.terms[1][1] == -1:
            return f"{self.terms[0][0]} {self.op} {self.terms[1][0]}"  # a comparison of two
        return f"{lhs} {self.op} {_const_text(self.const)}"

    @property
    def lhs(self) -> str:
        return self.terms[0][0] if self.op == "true" else _linear_text(self.terms)

    @property
    def instances(self) -> frozenset[int]:
        return frozenset(i for atom, _ in self.terms for i in atom_instances(atom))

    @property
    def shape(self) -> str:
        """The left side with instance numbers erased: literals that could match under
        some assignment of STAs have equal shapes (the index's prefilter)."""
        return " | ".join(sorted(INSTANCE.sub('"i".', atom) for atom, _ in self.terms))

    def mapped(self, mapping: Mapping[int, int]) -> Literal:
        """The same literal with instance i renamed mapping[i], renormalized."""
        terms = [(map_atom(atom, mapping), coef) for atom, coef in self.terms]
        if self.op == "true":
            return Literal(tuple(terms), "true", None)
        return _normalize(terms, self.op, None if self.const is None
                          else (self.const[0], self.value))


Clause = frozenset[Literal]  # an OR-predicate
PredSet = frozenset[Clause]  # a conjunction of OR-predicates


def clause_text(clause: Clause) -> str:
    return " OR ".join(sorted(lit.text for lit in clause))


def predset_text(predset: PredSet) -> str:
    return " AND ".join(sorted(f"({clause_text(c)})" if len(c) > 1 else clause_text(c)
                               for c in predset))


def map_clause(clause: Clause, mapping: Mapping[int, int]) -> Clause:
    return frozenset(lit.mapped(mapping) for lit in clause)


# -- atoms -----------------------------------------------------------------------------

INSTANCE = re.compile(r'"i(\d+)"\.')
_COLUMN_ATOM = re.compile(r'^"i(\d+)"\."((?:[^"]|"")*)"$')


def column_atom(instance: int, column: str) -> str:
    """'"i<instance>"."<column>"', quoted as sqlglot quotes it (built directly: this runs
    thousands of times per registration)."""
    return '"i%d"."%s"' % (instance, column.replace('"', '""'))


def atom_column(atom: str) -> tuple[int, str] | None:
    """(instance, column) of a column atom (column_atom's inverse); None: an opaque
    expression's atom."""
    match = _COLUMN_ATOM.match(atom)
    return None if match is None else (int(match.group(1)), match.group(2).replace('""', '"'))


def atom_instances(atom: str) -> set[int]:
    return {int(n) for n in INSTANCE.findall(atom)}


def map_atom(atom: str, mapping: Mapping[int, int]) -> str:
    match = _COLUMN_ATOM.match(atom)
    if match:
        return f'"i{mapping[int(match.group(1))]}".' + atom[len(f'"i{match.group(1)}".'):]
    return _map_opaque(atom, tuple(sorted(mapping.items())))


@lru_cache(maxsize=4096)
def _map_opaque(atom: str, mapping: tuple[tuple[int, int], ...]) -> str:
    table = {f"i{a}": f"i{b}" for a, b in mapping}

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table in table:
            return exp.column(node.name, table=table[node.table], quoted=True)
        return node

    return tree_of(atom).transform(rename, copy=False).sql(
        DIALECT, copy=False)



def _normalize(terms: list[tuple[str, Fraction]], op: str, const) -> Literal:
    """Sort atoms, scale so that the first coefficient is 1 (flipping the comparison
    when it was negative). const: (const_type, value) or None."""
    terms = sorted(terms)
    lead = terms[0][1]
    if lead != 1:
        if const is None or const[0] not in ("num", "interval"):
            return Literal(tuple(terms), op, None if const is None else _store(const))
        terms = [(a, c / lead) for a, c in terms]
        const = (const[0], _scale(const, 1 / lead))
        if lead < 0:
            op = FLIP[op]
    return Literal(tuple(terms), op, None if const is None else _store(const))

def _atom_text(e: exp.Expr) -> str:
    return unparen(e).sql(DIALECT)
