"""A query's `ORDER BY … LIMIT k [OFFSET o]` (or `FETCH FIRST k ROWS ONLY`) as a global
Top-K: the query ranked by row_number() over its ORDER BY, and the rows ranked o+1 … o+k
kept; `FETCH FIRST k ROWS WITH TIES` ranks by rank(), so that rows tied with the k-th
stay. The window node with the bound (argus.frontend.topk) then keeps only those rows;
its answer is the same bag of rows PostgreSQL's LIMIT returns (rows its ORDER BY ties
are PostgreSQL's arbitrary pick either way).
"""

from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..trees import DIALECT, folded
from .relations import figure_name

RANK = "argus_rn"
LIMITED = "argus_l"


def limit_as_top_k(tree: exp.Expr) -> exp.Expr:
    """The tree with every ORDER BY … LIMIT rewritten (the query's, a derived table's,
    a CTE's, a set operation's branch), innermost first; an ORDER BY without LIMIT or
    OFFSET is left to be refused."""
    limited = [node for node in tree.find_all(exp.Select, exp.SetOperation)
               if (node.args.get("limit") is not None or node.args.get("offset") is not None)
               and not _one_row_already(node)]
    for node in reversed(limited):  # (find_all is breadth-first: the deepest last)
        rewritten = top_k(node)
        if node is tree:
            return rewritten
        node.replace(rewritten)
    return tree


def _one_row_already(node: exp.Expr) -> bool:
    """An aggregate without GROUP BY gives one row: `LIMIT k` (k ≥ 1) keeps it, so the
    LIMIT and any ORDER BY are dropped (in place)."""
    limit = node.args.get("limit")
    if not (isinstance(node, exp.Select) and not node.args.get("group")
            and node.args.get("offset") is None and isinstance(limit, exp.Limit)
            and isinstance(limit.expression, exp.Literal) and not limit.expression.is_string
            and limit.expression.this.isdigit() and int(limit.expression.this) >= 1
            and any(e.find(exp.AggFunc) for e in node.expressions)):
        return False
    node.set("limit", None)
    node.set("order", None)
    return True


def top_k(tree: exp.Expr, partition: tuple[str, ...] = ()) -> exp.Expr:
    """`tree`'s ORDER BY … LIMIT as a rank, the first rows of each `partition` (output
    names) kept."""
    limit, offset = tree.args.get("limit"), tree.args.get("offset")
    if limit is None and offset is None:
        return tree
    order = tree.args.get("order")
    if order is None:
        raise UnsupportedQueryError("LIMIT without ORDER BY",
                                    "which rows it keeps is unspecified")
    ties = isinstance(limit, exp.Fetch) and limit.args["limit_options"].args.get("with_ties")
    if isinstance(limit, exp.Fetch):  # FETCH FIRST [n] ROWS ONLY | WITH TIES
        k = _count(limit.args.get("count") or exp.Literal.number(1), "FETCH FIRST")
    else:
        k = _count(limit.expression if limit is not None else None, "LIMIT")
    skip = _count(offset.expression if offset is not None else None, "OFFSET") or 0
    if ties and skip:
        raise UnsupportedQueryError("FETCH … WITH TIES after an OFFSET",
                                    "which tied rows it keeps is PostgreSQL's choice")
    inner = tree.copy()
    for arg in ("order", "limit", "offset"):
        inner.set(arg, None)
    names = _name_outputs(inner)
    visible = list(names)
    orders = [_resolved(o, inner, names) for o in order.expressions]  # (may add to names)
    ranked = exp.select(*(exp.Column(this=n.copy(), table=exp.to_identifier(LIMITED))
                          for n in visible)).select(
        exp.alias_(exp.Window(this=exp.Rank() if ties else exp.RowNumber(),
                              order=exp.Order(expressions=orders),
                              partition_by=[exp.column(p, table=LIMITED) for p in partition]
                              or None), RANK, quoted=False)
    ).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(LIMITED))))
    bounds = [exp.GT(this=exp.column(RANK), expression=exp.Literal.number(skip))]
    if k is not None:
        bounds.append(exp.LTE(this=exp.column(RANK), expression=exp.Literal.number(skip + k)))
    return exp.select(*(exp.Column(this=n.copy()) for n in visible)).from_(
        exp.Subquery(this=ranked, alias=exp.TableAlias(this=exp.to_identifier(LIMITED)))
    ).where(exp.and_(*bounds))


def _count(value: exp.Expr | None, clause: str) -> int | None:
    if value is None or isinstance(value, exp.Null):
        return None  # LIMIT ALL, LIMIT NULL
    if isinstance(value, exp.Literal) and value.is_int and int(value.this) >= 0:
        return int(value.this)
    raise UnsupportedQueryError(f"{clause} {value.sql(DIALECT)}",
                                f"{clause} must be a non-negative integer")


def _name_outputs(query: exp.Expr) -> list[exp.Identifier]:
    """The output names, every output given one (PostgreSQL's for those without);
    refused when two outputs share a name (the rank could not tell them apart)."""
    first = query
    while isinstance(first, exp.SetOperation):
        first = first.this
    if not isinstance(first, exp.Select) or any(isinstance(e, exp.Star) or (
            isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
            for e in first.expressions):
        raise UnsupportedQueryError("ORDER BY … LIMIT over SELECT *",
                                    "name the columns it returns")
    names = []
    for e in list(first.expressions):
        if isinstance(e, exp.Alias):
            names.append(e.args["alias"].copy())
        elif isinstance(e, exp.Column):
            names.append(e.this.copy())
        else:
            names.append(exp.to_identifier(figure_name(e), quoted=True))
            e.replace(exp.alias_(e.copy(), names[-1].copy()))
    if len({folded(n) for n in names}) != len(names):
        raise UnsupportedQueryError("ORDER BY … LIMIT over columns of the same name",
                                    "give each output column its own name")
    return names


def _resolved(ordered: exp.Ordered, query: exp.Expr, names: list[exp.Identifier]
              ) -> exp.Ordered:
    """An ORDER BY item over the limited query's output columns: by position, by
    output name, an expression the select list computes, or else one added to it (a
    column the outer query leaves out)."""
    key = ordered.this
    name = None
    if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.this) <= len(names):
        name = names[int(key.this) - 1]
    elif isinstance(key, exp.Column) and not key.table and folded(key.this) in map(
            folded, names):
        name = next(n for n in names if folded(n) == folded(key.this))
    elif isinstance(query, exp.Select):
        for e, n in zip(query.expressions, names):
            inner = e.this if isinstance(e, exp.Alias) else e
            if inner.sql(DIALECT) == key.sql(DIALECT):
                name = n
                break
    if name is None and isinstance(query, exp.Select) and not query.args.get("distinct"):
        name = exp.to_identifier(f"argus_o{len(names)}")  # a column only the rank reads
        query.select(exp.alias_(key.copy(), name.copy()), copy=False)
        names.append(name)
    if name is None:
        raise UnsupportedQueryError(
            f"ORDER BY {key.sql(DIALECT)} with LIMIT",
            "with DISTINCT or a set operation, order by columns of the select list "
            "(by name or position)")
    resolved = ordered.copy()
    resolved.set("this", exp.Column(this=name.copy(), table=exp.to_identifier(LIMITED)))
    return resolved
