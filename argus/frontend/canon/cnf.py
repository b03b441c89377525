"""A condition as a PredSet: CNF, each comparison a normalized Literal."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from ...trees import conjuncts, unparen, tree_of
from .linear import _exact_domain, _linear, _movable, _subtract
from .literals import (COMPARISONS, FLIP, MAX_CLAUSES, NEGATE, Clause, Literal, PredSet, Resolve,
                       TypeOf, _atom_text, _normalize)
from .values import FLOATS, _constant, float_text


def canonicalize(condition: exp.Expr, type_of: TypeOf, *, enabled: bool = True,
                 resolve: Resolve | None = None, finite: Collection[str] = ()) -> PredSet:
    """The PredSet of a condition whose columns are instance atoms ("i1"."c"); `finite`:
    the atoms whose dates and times are never infinite (a stream's time column).

    With enabled=False (the benchmark's NonCanon configuration) every top-level
    conjunct is an opaque literal: equal only to the same text, implying nothing else.
    """
    if not enabled:
        return frozenset(frozenset({_opaque(c)}) for c in conjuncts(condition))
    clauses = _cnf(condition, _Ctx(type_of, resolve, finite=finite), negated=False)
    if clauses is None:
        return frozenset({frozenset({_opaque(condition)})})
    return frozenset(c for c in clauses if not any(_tautology(lit) for lit in c))


@dataclass(frozen=True)
class _Ctx:
    type_of: TypeOf
    resolve: Resolve | None
    # move terms of dates and times across as sargable rewrites them: a difference of
    # infinite ones fails in PostgreSQL (no wrong row either way), and an index bounds
    # a window written as one
    lenient_times: bool = False
    finite: Collection[str] = ()  # atoms whose dates and times are never infinite




def _cnf(e: exp.Expr, ctx: _Ctx, negated: bool) -> list[Clause] | None:
    """CNF clauses of e (of NOT e when negated); None when it would grow too large."""
    e = unparen(e)
    if isinstance(e, exp.Not):
        return _cnf(e.this, ctx, not negated)
    if isinstance(e, (exp.And, exp.Or)):
        conjunction = isinstance(e, exp.And) != negated
        left = _cnf(e.left, ctx, negated)
        right = _cnf(e.right, ctx, negated)
        if left is None or right is None:
            return None
        if conjunction:
            return _dedupe(left + right)
        product = [a | b for a in left for b in right]
        return None if len(product) > MAX_CLAUSES else _dedupe(product)
    if isinstance(e, exp.Between) and not e.args.get("symmetric"):
        x, low, high = e.this, e.args["low"], e.args["high"]
        ge = _comparison(x, ">=", low, ctx)
        le = _comparison(x, "<=", high, ctx)
        if negated:  # NOT BETWEEN: x < low OR x > high
            return [frozenset({_negate(ge), _negate(le)})]
        return [frozenset({ge}), frozenset({le})]
    if isinstance(e, exp.In) and not e.args.get("query") and e.expressions:
        literals = [_comparison(e.this, "=", v, ctx) for v in e.expressions]
        if negated:  # NOT IN (list): x <> v for every v
            return [frozenset({_negate(lit)}) for lit in literals]
        return [frozenset(literals)]
    return [frozenset({_literal(e, ctx, negated)})]


def _dedupe(clauses: list[Clause]) -> list[Clause]:
    return list(dict.fromkeys(clauses))


def _literal(e: exp.Expr, ctx: _Ctx, negated: bool) -> Literal:
    op = COMPARISONS.get(type(e))
    if op is not None:
        lit = _comparison(e.this, op, e.expression, ctx)
    elif isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
        lit = Literal(((_atom_text(e.this), Fraction(1)),),
                      "is not null" if e.args.get("negate") else "is null", None)
    elif isinstance(e, exp.Boolean) and e.this is False:
        lit = Literal((("FALSE", Fraction(1)),), "true", None)
    else:
        lit = _opaque(e)
    return _negate(lit) if negated else lit


def _negate(lit: Literal) -> Literal:
    if lit.op == "true":
        return _opaque(exp.Not(this=exp.Paren(this=tree_of(lit.terms[0][0]))))
    return Literal(lit.terms, NEGATE[lit.op], lit.const)


def _opaque(e: exp.Expr) -> Literal:
    return Literal(((_atom_text(e), Fraction(1)),), "true", None)


def _tautology(lit: Literal) -> bool:
    return lit.op == "true" and lit.terms[0][0] == "TRUE"




def _side_text(e: exp.Expr) -> str:
    """A side of a comparison kept as written, as one atom: in parentheses when it is
    an operation, so that its text is never a linear form's (`x - y < 5` kept as
    written printed as `x < y + 5` moved across does; found by a helper)."""
    text = _atom_text(e)
    return f"({text})" if isinstance(unparen(e), (exp.Binary, exp.Unary)) else text


def _comparison(left: exp.Expr, op: str, right: exp.Expr, ctx: _Ctx | TypeOf) -> Literal:
    if not isinstance(ctx, _Ctx):
        ctx = _Ctx(ctx, None)
    type_of = ctx.type_of
    const_l, const_r = _constant(left), _constant(right)
    if (const_l is None) != (const_r is None):  # a side compared with a constant
        side, const = (right, const_l) if const_l is not None else (left, const_r)
        resolved = _resolved(side, left if const_l is not None else right, const, ctx)
        if resolved is not None and resolved[0] == "num" and const[0] != "num":
            number = exp.Literal.number(str(resolved[1]))  # e.g. k = '00': k = 0, exactly
            return _comparison(side, op, number, ctx) if side is left else \
                _comparison(number, op, side, ctx)
    lin_l, lin_r = _linear(left, type_of), _linear(right, type_of)
    if lin_l is not None and lin_r is not None and _movable(lin_l, lin_r, ctx):
        terms = dict(lin_l.terms)
        for atom, coef in lin_r.terms.items():
            terms[atom] = terms.get(atom, Fraction(0)) - coef
        # a column that cancels out is no column of the form: where it is NULL, the
        # comparison as written is NULL (i + j > i + 5 is not j > 5; found by a helper)
        cancelled = any(c == 0 for c in terms.values())
        terms = {a: c for a, c in terms.items() if c != 0}
        const = _subtract(lin_r.const, lin_l.const)
        if terms and const is not None and not cancelled \
                and _exact_domain(terms, const, type_of):
            return _normalize(list(terms.items()), op, const)
    # only orient: the constant (if any) to the right, else sides in text order
    if const_r is not None and const_l is None:
        return _normalize([(_side_text(left), Fraction(1))], op, resolved)
    if const_l is not None and const_r is None:
        return _normalize([(_side_text(right), Fraction(1))], FLIP[op], resolved)
    if const_l is None and const_r is None:
        a, b = _side_text(left), _side_text(right)
        if a != b:
            return _normalize([(a, Fraction(1)), (b, Fraction(-1))], op, ("num", Fraction(0)))
    return _opaque(exp.Paren(this=_build(left, op, right)))


def _resolved(side: exp.Expr, expr: exp.Expr, const, ctx: _Ctx):
    """A constant as the value PostgreSQL compares with `side`: (const_type, value). An exact
    number stays one where `side` is exact (an integer or numeric column, or a linear
    form of them); over a float column it is the float PostgreSQL converts it to.
    Anything else is asked of `ctx.resolve`; without an answer, the constant is
    unresolved ("str", "sql"): equal only to the same text, implying nothing."""
    const_type = const[0]
    if const_type in ("num", "interval"):
        lin = _linear(side, ctx.type_of)
        if lin is not None and lin.terms and _exact_domain(lin.terms, const, ctx.type_of):
            return const
        if const_type == "num" and _is_column(side) and ctx.type_of(_atom_text(side)) in FLOATS:
            return ("double precision", float_text(float(const[1])))
        if const_type == "interval":
            return const
    elif const_type == "bool":
        return const
    if ctx.resolve is not None:
        resolved = ctx.resolve(unparen(side), unparen(expr), ctx.type_of)
        if resolved is not None:
            return ("num", Fraction(resolved[1])) if resolved[0] == "num" else resolved
    return ("str", const[1]) if const_type == "str" else ("sql", _atom_text(expr))


def _is_column(e: exp.Expr) -> bool:
    return isinstance(unparen(e), exp.Column)



def _build(left: exp.Expr, op: str, right: exp.Expr) -> exp.Expr:
    cls = {v: k for k, v in COMPARISONS.items()}[op]
    return cls(this=left.copy(), expression=right.copy())
