"""Parenthesised queries read as PostgreSQL reads them.

sqlglot keeps the parentheses of `(SELECT …) ORDER BY k LIMIT 3`, of `(SELECT …) UNION
(SELECT …)` and of `((SELECT …))` as Subquery nodes without an alias, which the rest
of argus would take for derived tables missing their alias. Each is unwrapped here:
the query inside takes the parentheses' ORDER BY, LIMIT and OFFSET; an operand of a
set operation with modifiers of its own (`(SELECT … ORDER BY k LIMIT 2) UNION …`)
becomes a derived table, which keeps them.
"""

from __future__ import annotations

from sqlglot import exp

MODIFIERS = ("order", "limit", "offset")


def unwrap_parens(tree: exp.Expr) -> exp.Expr:
    """The tree with every unaliased parenthesised query unwrapped (in place)."""
    for paren in reversed(list(tree.find_all(exp.Subquery))):  # innermost first
        if paren.alias or not isinstance(paren.this, exp.Query):
            continue
        if not isinstance(paren.parent, (exp.SetOperation, exp.Subquery)) \
                and paren is not tree:
            continue  # a scalar, IN or EXISTS subquery, or a FROM item: parentheses belong
        inner, outer = paren.this, {m: paren.args.get(m) for m in MODIFIERS}
        if any(outer.values()):
            if any(inner.args.get(m) for m in MODIFIERS):
                continue  # `((… LIMIT 2) LIMIT 1)`: left as written
            for modifier, value in outer.items():
                if value is not None:
                    inner.set(modifier, value)
        if isinstance(paren.parent, exp.SetOperation) and any(
                inner.args.get(m) for m in MODIFIERS):
            inner = exp.select("*").from_(exp.Subquery(
                this=inner, alias=exp.TableAlias(this=exp.to_identifier("argus_operand"))))
        if paren is tree:
            tree = inner
        else:
            paren.replace(inner)
    return tree
