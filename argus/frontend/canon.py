"""Canonical predicates (ARGUS §5.1.1): a condition as a PredSet — a set of OR-clauses
of literal predicates (CNF) — where equivalent literals written differently are equal
values, and implication between literals, clauses and PredSets (subsumption, §5.1.3).

A literal is a linear form `Σ coef·atom  op  constant`, normalized so that its atoms
are sorted and the first has coefficient 1: `amount > 10`, `10 < amount`,
`NOT (amount <= 10)` and `amount - 10 > 0` are the same `Literal`. Terms are moved
across the comparison only where PostgreSQL's arithmetic is exact (integers, numeric,
dates; timestamps with fixed-length intervals), so two equal literals are true for the
same rows. Elsewhere (floats, text, functions) a comparison is only put in a standard
orientation; anything else is an opaque literal, equal only to itself.

Constants are compared as PostgreSQL values of the type PostgreSQL compares them in,
never as the text the user wrote: `d = '2024-1-5'` and `d = DATE '2024-01-05'` are one
literal, `x = 0.1000000000000000001` on a float column is `x = 0.1`. What only
PostgreSQL knows (how it reads a string literal or a cast, the type of an expression)
comes from a `Resolve` function the caller backs with the server (`argus.frontend.constants`);
without one, such constants are equal only to the same text and imply nothing.

Atoms name columns of instances as `"i1"."amount"`: instance numbers are the Standard
Table Aliases of §5.1.2, renumbered by `Literal.mapped` when a node's STAs are matched
against a query's. Pure: no database access.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sqlglot
from sqlglot import exp

from ..trees import DIALECT, conjuncts, unparen

MAX_CLAUSES = 32  # CNF of a condition beyond this is kept as one opaque literal

COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">",
               exp.GTE: ">="}
FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
NEGATE = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<",
          "is null": "is not null", "is not null": "is null"}

# A constant: (const_type, value). Its types: "num" (an exact number: Fraction), "interval"
# (timedelta, or _UNSAFE), "bool"; a PostgreSQL type name ("date", "double precision",
# "timestamp with time zone", "text", …) for a constant PostgreSQL resolved, its value
# the canonical text (`argus.frontend.constants`); "str" for a string literal nobody resolved
# (and catalogs written before constants were resolved), equal only to itself.
Const = tuple[str, object]

# Kinds whose distinct canonical texts are distinct values: `x = 'a'` implies `x <> 'b'`.
TEXT_EQUAL = {"bool", "boolean", "text", "character varying", "uuid"}
FLOATS = {"double precision", "real"}
_TIMES = {"date", "timestamp without time zone", "timestamp with time zone"}

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

    return sqlglot.parse_one(atom, read=DIALECT).transform(rename, copy=False).sql(
        DIALECT, copy=False)


# -- canonicalization ----------------------------------------------------------------

TypeOf = Callable[[str], str | None]  # column atom -> PostgreSQL type, None if unknown


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
        return _opaque(exp.Not(this=exp.Paren(this=sqlglot.parse_one(lit.terms[0][0],
                                                                    read=DIALECT))))
    return Literal(lit.terms, NEGATE[lit.op], lit.const)


def _opaque(e: exp.Expr) -> Literal:
    return Literal(((_atom_text(e), Fraction(1)),), "true", None)


def _tautology(lit: Literal) -> bool:
    return lit.op == "true" and lit.terms[0][0] == "TRUE"


def _atom_text(e: exp.Expr) -> str:
    return unparen(e).sql(DIALECT)


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


def float_text(value: float) -> str:
    """A float as PostgreSQL prints it (extra_float_digits = 1: shortest exact)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _build(left: exp.Expr, op: str, right: exp.Expr) -> exp.Expr:
    cls = {v: k for k, v in COMPARISONS.items()}[op]
    return cls(this=left.copy(), expression=right.copy())


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


# -- linear forms ------------------------------------------------------------------------

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


def _scale(const, k: Fraction):
    const_type, value = const
    if const_type == "num":
        return value * k
    if const_type == "interval" and value is not _UNSAFE:
        if k.denominator != 1:
            return _UNSAFE
        return value * int(k)
    raise ValueError(f"cannot scale a {const_type} constant")


# -- constants ---------------------------------------------------------------------------

_UNSAFE = object()  # an interval with months or years: not a fixed length
_UNITS = {"microsecond": dt.timedelta(microseconds=1), "millisecond": dt.timedelta(milliseconds=1),
          "second": dt.timedelta(seconds=1), "minute": dt.timedelta(minutes=1),
          "hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1),
          "week": dt.timedelta(weeks=1)}


def _constant(e: exp.Expr):
    """(const_type, value) of a constant expression, or None: "num" and "interval" (exact,
    for linear forms), "bool", "str" (a string literal) and "typed" (a cast of a
    literal), whose values only PostgreSQL can tell."""
    e = unparen(e)
    if isinstance(e, exp.Neg):
        inner = _constant(e.this)
        if inner is not None and inner[0] in ("num", "interval"):
            return (inner[0], _scale(inner, Fraction(-1)))
        return None
    if isinstance(e, exp.Literal):
        if e.is_string:
            return ("str", e.this)
        try:
            return ("num", Fraction(e.this))
        except (ValueError, ZeroDivisionError):
            return None
    if isinstance(e, exp.Boolean):
        return ("bool", bool(e.this))
    if isinstance(e, exp.Interval):
        return ("interval", _interval(e))
    if isinstance(e, exp.Cast) and _constant(e.this) is not None:
        if e.to.this == exp.DataType.Type.INTERVAL and isinstance(e.this, exp.Literal) \
                and e.this.is_string:
            return ("interval", _interval_text(e.this.this))
        return ("typed", e.sql(DIALECT))
    return None


def _interval(e: exp.Interval):
    text = e.this.this if isinstance(e.this, exp.Literal) else None
    if text is None:
        return _UNSAFE
    unit = e.args.get("unit")
    return _interval_text(f"{text} {unit.name}" if unit is not None else text)


def _interval_text(text: str):
    parts = re.findall(r"([-+]?\d+(?:\.\d+)?)\s*([a-z]+)", text.lower())
    if not parts or re.sub(r"[-+]?\d+(?:\.\d+)?\s*[a-z]+|\s", "", text.lower()):
        return _UNSAFE
    total = Fraction(0)  # microseconds
    for number, unit in parts:
        unit = unit.rstrip("s") if unit not in ("ms", "us") else unit
        unit = {"min": "minute", "sec": "second", "ms": "millisecond", "us": "microsecond",
                "hr": "hour", "mon": "month"}.get(unit, unit)
        if unit not in _UNITS:
            return _UNSAFE
        total += _UNITS[unit] // dt.timedelta(microseconds=1) * Fraction(number)
    if total.denominator != 1:  # PostgreSQL rounds what falls between microseconds its way
        return _UNSAFE  # ('1.5 microseconds' is 1 to it, 2 to Python; found by a helper)
    return dt.timedelta(microseconds=int(total))


def _store(const) -> tuple[str, str]:
    """A constant as (const_type, canonical text): hashable and stored in the catalog."""
    const_type, value = const
    if const_type == "num":
        return ("num", str(value))  # Fraction text: '10', '-1/3'
    if const_type == "interval":
        if value is _UNSAFE:
            return ("interval", "unsafe")
        return ("interval", _decimal(Fraction(value // dt.timedelta(microseconds=1), 10**6)))
    return (const_type, str(value))


def _parse_const(const: tuple[str, str]):
    const_type, text = const
    if const_type == "num":
        return Fraction(text)
    if const_type == "interval":
        if text == "unsafe":
            return _UNSAFE
        return dt.timedelta(microseconds=int(Fraction(text) * 10**6))
    return text


def _order_key(const: tuple[str, str]):
    """The constant's place in PostgreSQL's order of its type, or None: unordered (text
    orders by collation) or unknown."""
    const_type, text = const
    if const_type in ("num", "interval"):
        value = _parse_const(const)
        return None if value is _UNSAFE else value
    if const_type in FLOATS:  # PostgreSQL orders NaN above everything, Infinity included
        value = float(text)
        return (1, 0.0) if value != value else (0, value)
    if const_type in _TIMES:
        if text in ("infinity", "-infinity"):
            return (1 if text == "infinity" else -1, None)
        try:
            parsed = (dt.date.fromisoformat(text) if const_type == "date"
                      else dt.datetime.fromisoformat(text))
        except ValueError:  # BC, or a catalog's old form
            return None
        return (0, parsed)
    return None


def _const_text(const: tuple[str, str]) -> str:
    const_type, text = const
    if const_type == "num":
        value = Fraction(text)
        if value.denominator == 1:
            return str(value.numerator)
        return text if not _is_decimal(value) else _decimal(value)
    if const_type == "interval":
        return f"interval '{text} seconds'"
    if const_type == "bool":
        return text.upper()
    if const_type in ("typed", "sql"):  # SQL nobody resolved, as written
        return text
    quoted = "'" + text.replace("'", "''") + "'"
    if const_type == "str":
        return quoted
    if const_type in ("date", "timestamp"):  # (a catalog's old types)
        return f"{const_type.upper()} {quoted}"
    return f"{quoted}::{const_type}"


def _places(value: Fraction) -> int | None:
    """The digits after the point a finite decimal needs (None: it is not one, 1/3)."""
    d, twos, fives = value.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    return max(twos, fives) if d == 1 else None


def _is_decimal(value: Fraction) -> bool:
    return _places(value) is not None


def _decimal(value: Fraction) -> str:
    """A finite decimal's every digit (rounded to 50, 0.99…9 of 55 nines was 1: found by
    a helper)."""
    places = _places(value)
    if places is None:
        raise ValueError(f"{value} is no finite decimal")
    digits = str(abs(value * 10**places).numerator).rjust(places + 1, "0")
    whole, fraction = digits[:len(digits) - places], digits[len(digits) - places:].rstrip("0")
    return ("-" if value < 0 else "") + whole + ("." + fraction if fraction else "")


def _linear_text(terms) -> str:
    out = []
    for i, (atom, coef) in enumerate(terms):
        sign = "-" if coef < 0 else "+"
        size = abs(coef)
        factor = "" if size == 1 else (f"{_decimal(size) if _is_decimal(size) else size}*")
        if i == 0:
            out.append(("-" if sign == "-" else "") + factor + atom)
        else:
            out.append(f" {sign} {factor}{atom}")
    return "".join(out)


# -- subsumption -----------------------------------------------------------------------

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


# -- sargable join conditions --------------------------------------------------------------

_RANGE = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
ALIAS = re.compile(r'^"(t\d+)"\."(?:[^"]|"")+"$')  # a column of a join side


def sargable(condition: str, type_of: TypeOf) -> str:
    """The join condition with every window between its two sides also written with each
    side's column alone on one side of a comparison, so that PostgreSQL can bound an
    index scan of either side by the other's row: `t2.d - t1.d <= 30` becomes
    `t1.d >= t2.d - 30 AND t2.d <= t1.d + 30`, `t2.d BETWEEN t1.d AND t1.d + 30`
    gains `t1.d BETWEEN t2.d - 30 AND t2.d`. Only where the arithmetic is exact (as for
    canonical literals), so that the condition keeps the same rows."""
    tree = sqlglot.parse_one(condition, read=DIALECT)
    out, rewritten = [], False
    for conjunct in conjuncts(tree):
        if isinstance(conjunct, exp.Between) and not conjunct.args.get("symmetric"):
            parts = [(conjunct.this, ">=", conjunct.args["low"]),
                     (conjunct.this, "<=", conjunct.args["high"])]
        elif type(conjunct) in _RANGE:
            parts = [(conjunct.this, _RANGE[type(conjunct)], conjunct.expression)]
        else:
            parts = []
        isolated = [_isolate(_comparison(a, op, b, _Ctx(type_of, None, lenient_times=True)),
                             type_of) for a, op, b in parts]
        if parts and all(isolated):
            out.extend(text for pair in isolated for text in pair)
            rewritten = True
        else:
            out.append(unparen(conjunct).sql(DIALECT))
    return " AND ".join(f"({text})" for text in dict.fromkeys(out)) if rewritten else condition


def _isolate(lit: Literal, type_of: TypeOf) -> tuple[str, ...] | None:
    """`a - b op c` over a column of each side as `a op b + c` and `b op' a - c`."""
    if lit.op not in ("<", "<=", ">", ">=") or len(lit.terms) != 2 or lit.const is None:
        return None
    (a, ca), (b, cb) = lit.terms
    sides = {m[1] for m in map(ALIAS.match, (a, b)) if m}
    if ca != 1 or cb != -1 or len(sides) != 2:
        return None
    const_type, value = lit.const[0], lit.value
    if "date" in (type_of(a), type_of(b)) and not (const_type == "num" and value.denominator == 1):
        return None  # date ± integer days only
    if const_type == "num" and not _is_decimal(value):
        return None  # (1/3 written in SQL divides integers: 0; found by a helper)

    def plus(atom: str, const) -> str:  # atom + const, as SQL
        if const[0] == "num" and const[1] == 0:
            return atom
        if const[0] == "num" and const[1] < 0:
            return f"{atom} - {_const_text(_store(('num', -const[1])))}"
        return f"{atom} + {_const_text(_store(const))}"

    if const_type == "num" and value == 0:  # `a op b`: one comparison serves both sides
        return (f"{a} {lit.op} {b}",)
    negated = (const_type, _scale((const_type, value), Fraction(-1)))
    return f"{a} {lit.op} {plus(b, (const_type, value))}", f"{b} {FLIP[lit.op]} {plus(a, negated)}"



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
