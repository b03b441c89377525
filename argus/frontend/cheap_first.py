"""Cheap tests first: the arms of each OR and AND of a condition that cannot fail,
ordered by what they cost a row.

PostgreSQL evaluates an OR's arms, and an AND's inside an OR, in the order they are
written, and stops at the first that decides; it sorts a WHERE's top-level conjuncts by
its own cost estimates, which price a regular expression as an equality. Nexmark's q21
writes `substring(url FROM '…channel_id=…') IS NOT NULL OR lower(channel) IN (…)`: the
regular expression ran for every bid, though the second arm holds for all of them.
Reordered only where no arm can fail on any row (argus.failures.never_fails): then the
order cannot be seen in the answer, only in the time it takes.
"""

from __future__ import annotations

from sqlglot import exp

from ..failures import Types, never_fails
from ..trees import DIALECT, unparen, tree_of

# what a row costs, roughly, in PostgreSQL's time for one comparison
_PATTERNS = (exp.RegexpLike, exp.RegexpILike, exp.RegexpExtract, exp.RegexpReplace,
             exp.RegexpSplit, exp.SimilarTo)
REGEX_COST, LIKE_COST, CALL_COST = 100, 20, 3


def cheap_first(text: str | None, types: Types) -> str | None:
    """The condition with each OR's and AND's arms cheapest first (ties as written), or
    as it is where an arm may fail or nothing moves."""
    if text is None or not never_fails(text, types=types):
        return text
    tree = tree_of(text)
    ordered = _ordered(tree.copy())
    return text if ordered == tree else ordered.sql(DIALECT)


def cost(tree: exp.Expr) -> int:
    """A row's evaluation of the expression, in comparisons."""
    total = 0
    for node in tree.walk():
        if isinstance(node, _PATTERNS) or _regex_substring(node):
            total += REGEX_COST
        elif isinstance(node, exp.Like | exp.ILike):
            total += LIKE_COST
        elif isinstance(node, exp.Func):
            total += CALL_COST
        else:
            total += 1
    return total


def _regex_substring(node: exp.Expr) -> bool:
    """substring(x FROM 'pattern'): a regular expression (FROM a number is a position)."""
    start = node.args.get("start") if isinstance(node, exp.Substring) else None
    return isinstance(start, exp.Literal) and start.is_string


def _ordered(tree: exp.Expr) -> exp.Expr:
    """The tree (changed in place) with every chain of AND or OR sorted by cost."""
    def visit(node: exp.Expr) -> exp.Expr:
        inner = unparen(node)
        if isinstance(inner, exp.And | exp.Or):
            kind = type(inner)
            arms = sorted((visit(a) for a in _arms(inner, kind)), key=cost)
            out = arms[0]
            for arm in arms[1:]:
                out = kind(this=out, expression=arm)
            return exp.Paren(this=out) if isinstance(node, exp.Paren) else out
        for key, value in list(inner.args.items()):
            if isinstance(value, exp.Expr):
                inner.set(key, visit(value))
            elif isinstance(value, list):
                inner.set(key, [visit(v) if isinstance(v, exp.Expr) else v for v in value])
        return node

    return visit(tree)


def _arms(node: exp.Expr, kind: type) -> list[exp.Expr]:
    """The operands of a chain of one connective (a OR (b OR c): a, b, c)."""
    inner = unparen(node)
    if not isinstance(inner, kind):
        return [node]
    return _arms(inner.this, kind) + _arms(inner.expression, kind)
