"""Parenthesised queries read as PostgreSQL reads them.

sqlglot keeps the parentheses of `(SELECT …) ORDER BY k LIMIT 3`, of `(SELECT …) UNION
(SELECT …)` and of `((SELECT …))` as Subquery nodes without an alias, which the rest
of argus would take for derived tables missing their alias. Each is unwrapped here:
the query inside takes the parentheses' ORDER BY, LIMIT and OFFSET; an operand of a
set operation with modifiers of its own (`(SELECT … ORDER BY k LIMIT 2) UNION …`)
becomes a derived table, which keeps them. A parenthesised join of inner joins
(`a JOIN (b JOIN c ON x) ON y`) is flattened into its FROM clause.
"""

from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQueryError

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


def _inner(join: exp.Join) -> bool:
    return not join.side and join.kind in ("", "INNER", "CROSS") \
        and not join.args.get("using") and join.method != "NATURAL"


def _nest(item: exp.Expr) -> bool:
    """A parenthesised join as sqlglot reads it: an unaliased derived table holding a
    table with joins."""
    return (isinstance(item, exp.Subquery) and not item.alias
            and isinstance(item.this, exp.Table) and bool(item.this.args.get("joins")))


def flatten_nested_joins(tree: exp.Expr) -> exp.Expr:
    """`a JOIN (b JOIN c ON x) ON y` as `a JOIN b ON TRUE JOIN c ON x AND y`, and `FROM
    (a JOIN b ON x)` as `FROM a JOIN b ON x` (in place): inner joins, whose rows are the
    same however they nest. A nest with an outer, USING or NATURAL join around it or in
    it stays (a query re-run reads it as written; `refuse_nests` names it)."""
    for item in reversed(list(tree.find_all(exp.Subquery))):  # innermost first
        holder = item.parent
        if not _nest(item) or not all(map(_inner, item.this.args["joins"])):
            continue
        first = item.this.copy()
        moved = first.args["joins"]
        first.set("joins", None)
        if isinstance(holder, exp.From) and isinstance(holder.parent, exp.Select):
            select = holder.parent
            holder.set("this", first)
            select.set("joins", [*moved, *(select.args.get("joins") or [])])
        elif isinstance(holder, exp.Join) and _inner(holder):
            on = holder.args.get("on")
            if on is not None:
                last = moved[-1]
                last.set("on", exp.and_(last.args.get("on") or exp.true(), on))
                last.set("kind", None)  # (a CROSS JOIN with a condition: an inner one)
            joins = holder.parent.args["joins"]
            at = next(i for i, j in enumerate(joins) if j is holder)
            holder.parent.set("joins", [*joins[:at], exp.Join(this=first, on=exp.true()),
                                        *moved, *joins[at + 1:]])
    return tree


def refuse_nests(tree: exp.Expr) -> None:
    """A parenthesised join `flatten_nested_joins` kept, named (incremental queries)."""
    if any(_nest(item) for item in tree.find_all(exp.Subquery)):
        raise UnsupportedQueryError(
            "a parenthesised join with an outer, USING or NATURAL join around or in it",
            "write the parenthesised part as a derived table with an alias, (SELECT … "
            "FROM b JOIN c …) AS bc")
