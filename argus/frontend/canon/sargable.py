"""Join conditions rewritten so that PostgreSQL can bound either side of a window by
an index."""

from __future__ import annotations

import re
from fractions import Fraction

from sqlglot import exp

from ...trees import DIALECT, conjuncts, unparen, tree_of
from .cnf import _comparison, _Ctx
from .literals import FLIP, Literal, TypeOf
from .values import _const_text, _is_decimal, _scale, _store


_RANGE = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
ALIAS = re.compile(r'^"(t\d+)"\."(?:[^"]|"")+"$')  # a column of a join side


def sargable(condition: str, type_of: TypeOf) -> str:
    """The join condition with every window between its two sides also written with each
    side's column alone on one side of a comparison, so that PostgreSQL can bound an
    index scan of either side by the other's row: `t2.d - t1.d <= 30` becomes
    `t1.d >= t2.d - 30 AND t2.d <= t1.d + 30`, `t2.d BETWEEN t1.d AND t1.d + 30`
    gains `t1.d BETWEEN t2.d - 30 AND t2.d`. Only where the arithmetic is exact (as for
    canonical literals), so that the condition keeps the same rows."""
    tree = tree_of(condition)
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
