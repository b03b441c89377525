"""What a SELECT reads, defines and names: the scopes the subquery rewrites
(frontend.scalar, frontend.in_tests) correlate by."""

from __future__ import annotations

from sqlglot import exp


def aggregates(select: exp.Select) -> bool:
    """Whether `select` itself aggregates (not a subquery or derived table of it; a
    window's aggregate does not)."""
    return any(a.parent_select is select and not isinstance(a.parent, exp.Window)
               for a in select.find_all(exp.AggFunc))


def tables_of(node: exp.Expr) -> set[str]:
    """The table aliases `node`'s columns name."""
    return {c.table for c in node.find_all(exp.Column)}


def defined(node: exp.Expr) -> set[str]:
    """Table aliases a query defines, at any depth (qualify() made them unique)."""
    return ({t.alias_or_name for t in node.find_all(exp.Table)}
            | {s.alias for s in node.find_all(exp.Subquery) if s.alias})


def local(select: exp.Select) -> set[str]:
    """The aliases of `select`'s own FROM list."""
    items = [select.args["from_"].this] + [j.this for j in select.args.get("joins") or []]
    return {item.alias_or_name for item in items}


def name_output(expr: exp.Expr, select: exp.Select, name: str) -> set[str]:
    """An unnamed output column (bare, or named _col_N by qualify()) that is `expr`,
    named `name` as PostgreSQL names it; the name, to keep."""
    parent = expr.parent
    if parent is select:  # wrapped in place: the caller replaces `expr` later
        alias = exp.Alias(alias=exp.to_identifier(name, quoted=True))
        expr.replace(alias)
        alias.set("this", expr)
    elif isinstance(parent, exp.Alias) and parent.parent is select \
            and parent.alias.startswith("_col_"):
        parent.set("alias", exp.to_identifier(name, quoted=True))
    else:
        return set()
    return {name}


def branches(query: exp.Expr, kind: type[exp.Expr] = exp.SetOperation) -> list[exp.Expr]:
    """The branches of a tree of set operations of `kind`, in order (the nodes
    themselves: rewriting one rewrites the tree)."""
    branches, todo = [], [query]
    while todo:
        part = todo.pop(0)
        if isinstance(part, kind):
            todo[:0] = [part.this, part.expression]
        else:
            branches.append(part.this if isinstance(part, exp.Subquery) else part)
    return branches


def correlation(term: exp.Expr, outer: set[str]) -> tuple[exp.Expr, exp.Expr] | None:
    """(the outer side, the inner side) of a correlating equality `inner = outer`, or
    None for any other term."""
    if not isinstance(term, exp.EQ):
        return None
    for theirs, mine in ((term.left, term.right), (term.right, term.left)):
        if tables_of(theirs) and tables_of(theirs) <= outer and not (tables_of(mine) & outer):
            return theirs, mine
    return None
