"""Aggregate FILTER clauses as CASE arguments: `agg(x) FILTER (WHERE c)` is
`agg(CASE WHEN c THEN x END)` for every aggregate argus maintains, since they all skip
NULL inputs (and so give NULL, or 0 for a count, on a group no row passes): the
aggregate node then keeps them as it keeps any aggregate of an expression, shared by the
computation index like any other.

Exact in PostgreSQL's terms: a row passes a FILTER only when `c` is true (false and
NULL leave it out, as CASE does), and `x` is evaluated only for rows that pass (CASE
evaluates its THEN only when its WHEN is true), so an argument that would fail on the
rows filtered out fails on none.
"""

from __future__ import annotations

from sqlglot import exp

from ..trees import DIALECT
from .grouping import AGGREGATES


def filters_as_case(tree: exp.Expr) -> exp.Expr:
    """The tree with each FILTER of a maintained aggregate folded into its argument;
    other aggregates keep theirs (and are refused by name by the planner)."""
    def fold(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Filter) or not isinstance(node.this, exp.AggFunc):
            return node
        call, condition = node.this, node.expression.this
        if call.sql(DIALECT).split("(", 1)[0].strip().lower() not in AGGREGATES:
            return node
        arg = call.this
        distinct = isinstance(arg, exp.Distinct)
        values = arg.expressions if distinct else [arg]
        if len(values) != 1 or values[0] is None:
            return node
        value = exp.Literal.number(1) if isinstance(values[0], exp.Star) else values[0]
        case = exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])
        folded = call.copy()
        folded.set("this", exp.Distinct(expressions=[case]) if distinct else case)
        return folded

    return tree.transform(fold)
