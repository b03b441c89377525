"""Linear forms `Σ coef·atom + const` of comparison sides, and when PostgreSQL's
arithmetic lets terms move across a comparison without changing which rows pass."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from ...trees import unparen
from .literals import TypeOf, _atom_text
from .values import _UNSAFE, _constant, _scale

if TYPE_CHECKING:
    from .cnf import _Ctx


@dataclass
class _Lin:
    terms: dict[str, Fraction]
    const: tuple[str, object]  # ('num', Fraction) or ('interval', timedelta)


_EXACT = re.compile(r"^(smallint|integer|bigint|numeric.*|date)$")
_ZERO = ("num", Fraction(0))


def _exact_domain(terms: dict[str, Fraction], const, type_of: TypeOf) -> bool:
    """Is moving terms across the comparison exact for these atoms and constant?"""
    types = [type_of(a) for a in terms]
    if any(t is None for t in types):
        return False
    if all(_EXACT.match(t) for t in types):
        return const[0] == "num"
    if all(t.startswith("timestamp") for t in types) and const[0] == "interval":
        # one type only: PostgreSQL converts a timestamp compared with a timestamptz in
        # the session's time zone, and an interval moved across that conversion changes
        # the comparison where daylight saving time shifts
        with_tz = "with time zone" in types[0]
        return (len(set(types)) == 1 and const[1] is not _UNSAFE
                and not (with_tz and const[1].days))
    return False


_INTEGER = re.compile(r"^(smallint|integer|bigint)$")
_INFINITE = re.compile(r"^(date|timestamp)")  # types with ±infinity, whose differences fail


def _numbers_only(atom: str, type_of: TypeOf, finite: Collection[str]) -> bool:
    """Does the atom hold numbers only, which arithmetic keeps in order: an integer, or a
    date or time known never to be infinite (`finite`: a stream's time column, whose
    inbox refuses infinities)? Not a numeric (NaN, ±Infinity), a float, a type unknown."""
    pg_type = type_of(atom) or ""
    return bool(_INTEGER.match(pg_type) or atom in finite and _INFINITE.match(pg_type))


def _movable(left: _Lin, right: _Lin, ctx: _Ctx) -> bool:
    """May terms move across a comparison of these sides? Over atoms of numbers only
    (_numbers_only), yes. Else only where each side is a constant or one atom times a
    positive number plus a constant, the atoms apart: PostgreSQL orders NaN above every
    number, -NaN is NaN and 'Infinity' - 'Infinity' is NaN, and only a strictly
    increasing function of one atom on each side keeps every comparison as written (x > y
    is false and x - y > 0 true where y is NaN; found by a helper); and a difference of
    infinite dates fails where the comparison moved across answers (d - e > 5 and
    d > e + 5 sharing one node failed a query that PostgreSQL answers) — unless lenient,
    as sargable is: there every difference that answers is of finite dates."""
    if all(_numbers_only(a, ctx.type_of, ctx.finite)
           or ctx.lenient_times and _INFINITE.match(ctx.type_of(a) or "")
           for a in (*left.terms, *right.terms)):
        return True
    return not left.terms.keys() & right.terms.keys() and all(
        len(side.terms) <= 1 and all(c > 0 for c in side.terms.values())
        for side in (left, right))


def _linear(e: exp.Expr, type_of: TypeOf) -> _Lin | None:
    e = unparen(e)
    if isinstance(e, exp.Column):
        atom = _atom_text(e)
        return _Lin({atom: Fraction(1)}, _ZERO) if type_of(atom) else None
    const = _constant(e)
    if const is not None:
        return _Lin({}, const) if const[0] in ("num", "interval") else None
    if isinstance(e, exp.Neg):
        inner = _linear(e.this, type_of)
        return None if inner is None else _times(inner, Fraction(-1))
    if isinstance(e, (exp.Add, exp.Sub)):
        a, b = _linear(e.left, type_of), _linear(e.right, type_of)
        if a is None or b is None:
            return None
        if isinstance(e, exp.Sub):
            b = _times(b, Fraction(-1))
            if b is None:  # (an interval of no fixed length: months, years)
                return None
        const = _add(a.const, b.const)
        if const is None:
            return None
        terms = dict(a.terms)
        for atom, coef in b.terms.items():
            terms[atom] = terms.get(atom, Fraction(0)) + coef
        return _Lin(terms, const)
    if isinstance(e, exp.Mul):
        a, b = _linear(e.left, type_of), _linear(e.right, type_of)
        for x, y in ((a, b), (b, a)):
            if x is not None and y is not None and not y.terms and y.const[0] == "num":
                return _times(x, y.const[1])
    return None


def _times(lin: _Lin, k: Fraction) -> _Lin | None:
    if lin.const[0] == "interval" and (lin.const[1] is _UNSAFE or k.denominator != 1):
        return None
    return _Lin({a: c * k for a, c in lin.terms.items()}, (lin.const[0], _scale(lin.const, k)))


def _add(a, b):
    if a == _ZERO:
        return b
    if b == _ZERO:
        return a
    if a[0] == b[0] == "num":
        return ("num", a[1] + b[1])
    if a[0] == b[0] == "interval" and _UNSAFE not in (a[1], b[1]):
        return ("interval", a[1] + b[1])
    return None


def _subtract(a, b):
    if b == _ZERO:
        return a
    negated = _scale(b, Fraction(-1)) if b[0] in ("num", "interval") else None
    return None if negated is None else _add(a, (b[0], negated))
