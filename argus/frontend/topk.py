"""Top-K per group: a window node whose ranking column a selection above bounds
(`WHERE rn <= k`, `rn < k`, `rn = 1`) keeps only the rows within the bound, so that a
cycle diffs and stores k rows per partition, not every row with its rank. The
selection still applies its whole predicate above it.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from ..plan import Output, Plan, Scan, Select, Window
from ..trees import conjuncts, tree_of

RANKINGS = (exp.RowNumber, exp.Rank, exp.DenseRank)


def push_top_k(output: Output) -> Output:
    return dataclasses.replace(output, input=_walk(output.input))


def _walk(plan: Plan) -> Plan:
    if isinstance(plan, Select) and plan.predicate is not None:
        plan = _bounded(plan) or plan
    for attr in ("input", "left", "right"):
        below = getattr(plan, attr, None)
        if below is not None and not isinstance(below, Scan):
            plan = dataclasses.replace(plan, **{attr: _walk(below)})
    return plan


def _bounded(select: Select) -> Plan | None:
    """`select` over its window with the window keeping the rows within the bound, or
    None when the predicate bounds no ranking column of a window right below it
    (through projections)."""
    chain, below = [], select.input
    while isinstance(below, Select) and below.predicate is None:
        chain.append(below)
        below = below.input
    if not isinstance(below, Window) or below.keep is not None:
        return None
    for term in conjuncts(tree_of(select.predicate)):
        column, k = _bound(term)
        if column is None:
            continue
        for projection in chain:  # the column's name in the window node
            exprs = {c.name: c.expr for c in projection.columns}
            source = exprs.get(column)
            column = _plain(source) if source is not None else None
            if column is None:
                break
        window = {c.name: c.expr for c in below.columns}.get(column)
        if window is None or not isinstance(
                tree_of(window).this, RANKINGS):
            continue
        kept: Plan = dataclasses.replace(below, keep=(column, k))
        for projection in reversed(chain):
            kept = dataclasses.replace(projection, input=kept)
        return dataclasses.replace(select, input=kept)
    return None


def _bound(term: exp.Expr) -> tuple[str | None, int]:
    """(column, k) for `t1.column <= k`, `< k + 1`, `= 1` (and mirrored)."""
    ops = {exp.LTE: 0, exp.LT: -1, exp.EQ: 0}
    flipped = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.EQ: exp.EQ}
    if type(term) in flipped and isinstance(term.right, exp.Column):
        term = flipped[type(term)](this=term.right, expression=term.left)
    if type(term) not in ops or not isinstance(term.left, exp.Column) \
            or not (isinstance(term.right, exp.Literal) and term.right.is_int):
        return None, 0
    k = int(term.right.this) + ops[type(term)]
    return (term.left.name, k) if k >= 1 and term.left.table == "t1" else (None, 0)


def _plain(expr: str) -> str | None:
    """The column a projection passes through unchanged (`"t1"."c"`), or None."""
    tree = tree_of(expr)
    return tree.name if isinstance(tree, exp.Column) and tree.table == "t1" else None
