"""Implication between literals, clauses and PredSets (subsumption, ARGUS §5.1.3), and
the bounds two comparisons imply together (transitivity)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from fractions import Fraction


from .linear import _numbers_only
from .literals import Clause, Literal, PredSet, TypeOf, _normalize
from .values import TEXT_EQUAL, _is_decimal, _order_key


Exact = Callable[[str], bool]  # does an atom hold numbers only (exact_atoms)?


def _no_atom(atom: str) -> bool:
    return False


def implies(p: Literal, q: Literal, exact: Exact = _no_atom) -> bool:
    """Does p imply q (every row satisfying p satisfies q)? Sound, not complete.
    A comparison of columns implies one with another constant only where `exact` says
    each holds numbers only (x >= y is true and x > y - 5 false where both are NaN or
    Infinity; found by a helper)."""
    if p == q:
        return True
    if p.terms != q.terms or p.op == "true" or q.op == "true":
        return False
    if len(p.terms) > 1 and p.const != q.const \
            and not all(exact(atom) for atom, _ in p.terms):
        return False
    if q.op == "is not null":
        return p.op not in ("is null",)
    if p.const is None or q.const is None or p.const[0] != q.const[0]:
        return False
    a, b = _order_key(p.const), _order_key(q.const)
    if a is None or b is None:
        return (p.const[0] in TEXT_EQUAL and p.op == "=" and q.op == "<>"
                and p.const[1] != q.const[1])
    return _OP_IMPLIES[p.op][q.op](a, b)


_OP_IMPLIES = {
    "=": {"=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
          "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b},
    ">": {">": lambda a, b: a >= b, ">=": lambda a, b: a >= b, "<>": lambda a, b: b <= a},
    ">=": {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<>": lambda a, b: b < a},
    "<": {"<": lambda a, b: a <= b, "<=": lambda a, b: a <= b, "<>": lambda a, b: b >= a},
    "<=": {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, "<>": lambda a, b: b > a},
    "<>": {},
}
for _table in _OP_IMPLIES.values():
    for _op in ("=", "<>", "<", "<=", ">", ">="):
        _table.setdefault(_op, lambda a, b: False)


def clause_implies(c: Clause, d: Clause, exact: Exact = _no_atom) -> bool:
    """c ⇒ d when every literal of c implies some literal of d."""
    return all(any(implies(p, q, exact) for q in d) for p in c)


def predset_implies(p: PredSet, q: PredSet, exact: Exact = _no_atom) -> bool:
    """P ⇒ Q when every clause of Q is implied by some clause of P."""
    return all(any(clause_implies(c, d, exact) for c in p) for d in q)


def exact_atoms(type_of: TypeOf, finite: Collection[str] = ()) -> Exact:
    """`implies`'s test of an atom (_numbers_only)."""
    return lambda atom: _numbers_only(atom, type_of, finite)


def relation(p: PredSet, q: PredSet, exact: Exact = _no_atom) -> str:
    """'equivalent', 'implies' (p is the more selective), 'implied-by' or 'none'."""
    forward, backward = predset_implies(p, q, exact), predset_implies(q, p, exact)
    if forward and backward:
        return "equivalent"
    return "implies" if forward else "implied-by" if backward else "none"



# -- transitivity --------------------------------------------------------------------------

def _at_least(lit: Literal) -> list[tuple[dict[str, Fraction], Fraction, bool]]:
    """A numeric comparison as `Σ coef·atom ≥ const` (strict: >) forms: two for =."""
    if lit.const is None or lit.const[0] != "num" or lit.op not in ("=", "<", "<=", ">", ">="):
        return []
    terms, value = dict(lit.terms), lit.value
    negated = ({a: -c for a, c in terms.items()}, -value)
    if lit.op == "=":
        return [(terms, value, False), (*negated, False)]
    if lit.op in (">", ">="):
        return [(terms, value, lit.op == ">")]
    return [(*negated, lit.op == "<")]


def eliminate(p: Literal, q: Literal, atom: str) -> list[Literal]:
    """What p and q imply with `atom` eliminated (a Fourier–Motzkin step): from
    `x > 1000000` and `y - 0.5x > 0`, `y > 500000`. Exact: both are linear comparisons
    with numeric constants, which canonical literals are only over exact types. A
    constant that is not a finite decimal is left out (its SQL text would not be
    exact)."""
    out = []
    for pt, pc, ps in _at_least(p):
        for qt, qc, qs in _at_least(q):
            a, b = pt.get(atom, 0), qt.get(atom, 0)
            if not (a and b) or (a > 0) == (b > 0):
                continue
            terms = {x: abs(b) * pt.get(x, 0) + abs(a) * qt.get(x, 0) for x in {*pt, *qt}}
            terms = [(x, c) for x, c in terms.items() if c and x != atom]
            value = abs(b) * pc + abs(a) * qc
            if not terms:
                continue
            lit = _normalize(terms, ">" if ps or qs else ">=", ("num", value))
            if _is_decimal(lit.value):
                out.append(lit)
    return out
