"""A LATERAL subquery correlated by equalities in its WHERE, as a join on them (the
unnesting Neumann and Kemper describe): `p [LEFT] JOIN LATERAL (SELECT … FROM a WHERE
a.k = p.id AND …) x ON c` is `p [LEFT] JOIN (SELECT …, a.k AS argus_lk0 FROM a WHERE …)
x ON x.argus_lk0 = p.id AND c`. Each outer row's key is constant in its subquery, so
GROUP BY and DISTINCT gain the key, and ORDER BY … LIMIT becomes a Top-K per key
(row_number() partitioned by it); WHERE terms reading only the outer row join the ON.
An aggregate without GROUP BY gives one row for each outer row, over no rows too (a
count of 0): each of its columns the query reads becomes a correlated scalar subquery
(argus.frontend.scalar). Runs before ORDER BY … LIMIT and set-returning functions are
rewritten (argus.frontend.limit, argus.frontend.lateral), on the tree as parsed.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from ..errors import UnknownColumnError, UnsupportedQueryError
from ..failures import never_fails
from ..trees import DIALECT, conjuncts, folded
from .limit import top_k
from .relations import figure_name
from .scopes import aggregates

KEY = "argus_lk"
NOT_EQUALITIES = "a LATERAL subquery correlated other than by equalities in its WHERE"


TOP_1 = "argus_s"


def scalar_top_1(tree: exp.Expr) -> exp.Expr:
    """A scalar subquery that picks its row by ORDER BY … LIMIT 1 (`(SELECT f.w FROM f
    WHERE f.k = e.k ORDER BY f.id DESC LIMIT 1)`, the latest w per key) as the column of
    a `LEFT JOIN LATERAL (…) ON TRUE`: no row is NULL, as the subquery's value is, and
    the lateral join becomes a Top-1 per key (`lateral_subqueries`). Only in the select
    list or WHERE of a SELECT that does not group: there a row of the join is a row of
    the FROM clause."""
    for n, paren in enumerate(reversed(list(tree.find_all(exp.Subquery)))):
        inner, outer = paren.this, paren.parent_select
        if not (isinstance(inner, exp.Select) and outer is not None and _scalar(paren)
                and _limit_one(inner) and inner.args.get("order") is not None
                and len(inner.expressions) == 1 and _plain(outer)
                and _clause_of(paren, outer) in ("expressions", "where")):
            continue
        alias = f"{TOP_1}{n}"
        picked = inner.copy()
        picked.set("expressions", [exp.alias_(inner.expressions[0].copy(), "argus_v")])
        outer.append("joins", exp.Join(
            this=exp.Lateral(this=exp.Subquery(this=picked),
                             alias=exp.TableAlias(this=exp.to_identifier(alias))),
            side="LEFT", on=exp.true()))
        paren.replace(exp.column("argus_v", table=alias))
    return tree


def _scalar(paren: exp.Subquery) -> bool:
    """A subquery read as a value: not a FROM item, nor IN's, EXISTS', ANY's or a set
    operation's operand."""
    return paren.alias == "" and not isinstance(
        paren.parent, (exp.From, exp.Join, exp.Lateral, exp.In, exp.Exists, exp.Any, exp.All,
                       exp.SetOperation))


def _limit_one(select: exp.Select) -> bool:
    limit = select.args.get("limit")
    return (isinstance(limit, exp.Limit) and isinstance(limit.expression, exp.Literal)
            and limit.expression.this == "1" and select.args.get("offset") is None)


def _plain(select: exp.Select) -> bool:
    """No grouping, DISTINCT or window: a row of its output is a row of its FROM."""
    return not (select.args.get("group") or select.args.get("having")
                or select.args.get("distinct")
                or any(e.find(exp.AggFunc, exp.Window) and not _inside_subquery(e, select)
                       for e in select.expressions))


def _inside_subquery(node: exp.Expr, select: exp.Select) -> bool:
    found = node.find(exp.AggFunc, exp.Window)
    return found is not None and found.parent_select is not select


def _clause_of(node: exp.Expr, select: exp.Select) -> str | None:
    while node.parent is not None and node.parent is not select:
        node = node.parent
    return node.arg_key if node.parent is select else None


def lateral_subqueries(tree: exp.Expr, columns_of: Callable[[exp.Expr], list[str]]
                       ) -> exp.Expr:
    """The parsed `tree` with every LATERAL subquery decorrelated, innermost first.
    `columns_of(item)`: a FROM item's column names ([] when unknown)."""
    for select in reversed(list(tree.find_all(exp.Select))):
        joins = select.args.get("joins") or []
        for position, join in enumerate(joins):
            if isinstance(join.this, exp.Lateral) and isinstance(join.this.this, exp.Subquery):
                before = [select.args["from_"].this] + [j.this for j in joins[:position]]
                _decorrelate(select, join, {folded(_alias(i)) for i in before}, columns_of)
    return tree


def _alias(item: exp.Expr) -> exp.Identifier:
    """The name a FROM item is read by, as written (quoted or not)."""
    alias = item.args.get("alias")
    if isinstance(item, exp.Lateral) and alias is None:
        alias = item.this.args.get("alias")
    if alias is not None and alias.this:
        return alias.this
    if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
        return item.this
    return exp.to_identifier(item.alias_or_name)


def _decorrelate(select: exp.Select, join: exp.Join, outer: set[str],
                 columns_of: Callable[[exp.Expr], list[str]]) -> None:
    lateral = join.this
    alias = lateral.args.get("alias") or lateral.this.args.get("alias")
    inner = lateral.this.this
    if alias is None or not alias.name:
        raise UnsupportedQueryError("a LATERAL subquery without an alias", "name it: AS x")
    name = alias.name
    if not isinstance(inner, exp.Select):
        raise UnsupportedQueryError(f"LATERAL ({inner.sql(DIALECT)[:60]}) {name}",
                                    "a LATERAL subquery is maintained when it is a SELECT")
    if not inner.args.get("from_"):  # (its names resolve against the outer row as
        # PostgreSQL's would only with much of its scoping: refused, clearly)
        raise UnsupportedQueryError(
            f"a LATERAL subquery without FROM ({name})",
            "write its expressions in the select list, or in a derived table over the "
            "FROM items before it")
    _check_own_columns(inner, name, columns_of)
    keys, kept, on_outer = _correlation(inner, name, outer)
    if not (keys or on_outer):  # not correlated at all: a derived table
        join.set("this", exp.Subquery(this=inner, alias=exp.TableAlias(
            this=alias.this.copy(), columns=[c.copy() for c in alias.columns] or None)))
        return
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)
                                       and (not e.table or e.table == name))
           for e in select.expressions):
        raise UnsupportedQueryError(f"SELECT * over the LATERAL subquery {name}",
                                    "name the columns it returns")
    given = [folded(c) for c in alias.columns]
    if aggregates(inner) and not inner.args.get("group"):
        names = _output_names(inner)
        _as_scalars(select, join, inner, alias.this, given + names[len(given):], on_outer)
        return
    _keyed(join, inner, alias, given, keys, kept, on_outer)


def _correlation(inner: exp.Select, name: str, outer: set[str]
                 ) -> tuple[list[tuple[exp.Expr, exp.Expr]], list[exp.Expr], list[exp.Expr]]:
    """The subquery's WHERE split: equalities with the outer row (its side, the outer
    row's), terms of its own rows, terms of the outer row's alone; refused if it reads
    the outer row otherwise."""
    defined = {folded(_alias(t)) for t in inner.find_all(exp.Table, exp.Subquery)}

    def outside(node: exp.Expr) -> set[str]:
        return {folded(c.args["table"]) for c in node.find_all(exp.Column)
                if c.table} - defined

    def only_outer(node: exp.Expr) -> bool:  # every column the outer row's
        columns = list(node.find_all(exp.Column))
        return bool(columns) and all(c.table and folded(c.args["table"]) not in defined
                                     for c in columns)

    if outside(inner) - outer:
        raise UnsupportedQueryError(f"LATERAL subquery {name} correlated with "
                                    f"{', '.join(sorted(outside(inner) - outer))}",
                                    "it may read the FROM items before it, one level out")
    where = inner.args.get("where")
    keys, kept, on_outer = [], [], []
    for term in conjuncts(where.this if where else None):
        refs = outside(term)
        if not refs:
            kept.append(term)
        elif not term.find(exp.Select) and only_outer(term):
            on_outer.append(term)  # the outer row's alone
        elif isinstance(term, exp.EQ) and not term.find(exp.Select) and (
                key := _key(term, only_outer)) is not None:
            keys.append(key)
        else:
            raise UnsupportedQueryError(NOT_EQUALITIES, "correlate it by col = outer.col terms")
    for mine, _ in keys:  # computed on every row of the subquery, not only those it reads
        if not never_fails(mine.sql(DIALECT)):
            raise UnsupportedQueryError(
                f"a LATERAL subquery correlated by {mine.sql(DIALECT)}, which can fail on a "
                "row", "compute on the outer row's side: a.k = p.id - 1, not a.k + 1 = p.id")
    rest = inner.copy()
    rest.set("where", None)
    if outside(rest):
        raise UnsupportedQueryError(NOT_EQUALITIES, "read the outer row's columns in its WHERE")
    return keys, kept, on_outer


def _keyed(join: exp.Join, inner: exp.Select, alias: exp.TableAlias, given: list[str],
           keys: list[tuple[exp.Expr, exp.Expr]], kept: list[exp.Expr],
           on_outer: list[exp.Expr]) -> None:
    """The subquery computed for every key its correlation reads (its windows, LIMIT and
    GROUP BY per key), joined on those keys."""
    inner.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    for window in inner.find_all(exp.Window):  # over the outer row's rows only
        if window.parent_select is inner:
            window.set("partition_by", [m.copy() for m, _ in keys]
                       + list(window.args.get("partition_by") or []))
    partition = []
    for position, (mine, _) in enumerate(keys):
        key = f"{KEY}{position}"
        inner.select(exp.Alias(this=mine.copy(), alias=exp.to_identifier(key)), copy=False)
        if inner.args.get("group"):
            inner.group_by(mine.copy(), copy=False)
        partition.append(key)
    if inner.args.get("limit") is not None or inner.args.get("offset") is not None:
        inner = top_k(inner, tuple(partition))
    for e, column in zip(inner.expressions, given):  # the alias list, once ORDER BY is read
        e.replace(exp.Alias(this=(e.this if isinstance(e, exp.Alias) else e).copy(),
                            alias=exp.to_identifier(column, quoted=True)))
    on = [exp.EQ(this=exp.column(k, table=alias.this.copy()), expression=theirs.copy())
          for k, (_, theirs) in zip(partition, keys)] + [t.copy() for t in on_outer]
    written = join.args.get("on")
    if written is not None and not (isinstance(written, exp.Boolean) and written.this):
        on.append(written.copy())
    join.set("this", exp.Subquery(this=inner, alias=exp.TableAlias(this=alias.this.copy())))
    join.set("on", exp.and_(*on))
    if join.kind == "CROSS":
        join.set("kind", None)


def _check_own_columns(inner: exp.Select, name: str,
                       columns_of: Callable[[exp.Expr], list[str]]) -> None:
    """An unqualified column of the subquery's own clauses is one of its FROM items':
    PostgreSQL would look for it outside too, which cannot be told apart here."""
    if not inner.args.get("from_"):
        return
    items = [inner.args["from_"].this] + [j.this for j in inner.args.get("joins") or []]
    known = [columns_of(item) for item in items]
    if any(not c or "*" in c for c in known):
        return
    own = {folded(exp.to_identifier(c)) for columns in known for c in columns} | {
        folded(e.args["alias"]) for e in inner.expressions if isinstance(e, exp.Alias)}
    for column in inner.find_all(exp.Column):
        if column.parent_select is inner and not column.table \
                and not isinstance(column.this, exp.Star) and folded(column.this) not in own:
            raise UnsupportedQueryError(
                f"column {column.name} in the LATERAL subquery {name}",
                f"it is not a column of {', '.join(i.alias_or_name for i in items)}: qualify "
                "a column of the outer row (p.col)")


def _key(term: exp.EQ, only_outer: Callable[[exp.Expr], bool]
         ) -> tuple[exp.Expr, exp.Expr] | None:
    """(the subquery's side, the outer row's side) of `inner = outer`, or None."""
    for mine, theirs in ((term.this, term.expression), (term.expression, term.this)):
        if only_outer(theirs) and not any(only_outer(c) for c in mine.find_all(exp.Column)):
            return mine, theirs
    return None


def _output_names(inner: exp.Select) -> list[str]:
    """The subquery's column names, as PostgreSQL names them, written onto its select
    list as AS aliases."""
    names = []
    for e in list(inner.expressions):
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            raise UnsupportedQueryError("SELECT * in a LATERAL subquery",
                                        "name the columns it returns")
        value = e.this if isinstance(e, exp.Alias) else e
        name = folded(e.args["alias"]) if isinstance(e, exp.Alias) else figure_name(value)
        e.replace(exp.Alias(this=value.copy(), alias=exp.to_identifier(name, quoted=True)))
        names.append(name)
    return names


def _as_scalars(select: exp.Select, join: exp.Join, inner: exp.Select, name: exp.Identifier,
                names: list[str], on_outer: list[exp.Expr]) -> None:
    """An aggregate without GROUP BY: one row per outer row, each column read as the
    subquery of that column alone."""
    written = join.args.get("on")
    if on_outer or inner.args.get("having") or (
            written is not None and not (isinstance(written, exp.Boolean) and written.this)):
        raise UnsupportedQueryError(
            f"LATERAL aggregate {name.name} with HAVING, a join condition or a WHERE term on "
            "the outer row alone", "join it ON TRUE and correlate it by equalities only")
    joins = select.args["joins"]
    joins.remove(join)
    select.set("joins", joins or None)
    for ref in list(select.find_all(exp.Column)):
        if not ref.table:
            if folded(ref.this) in names:
                raise UnsupportedQueryError(
                    f"column {ref.name} of the LATERAL aggregate {name.name}, unqualified",
                    f"write {name.name}.{ref.name}")
            continue
        if folded(ref.args["table"]) != folded(name):
            continue
        if folded(ref.this) not in names:
            raise UnknownColumnError(f"column {name.name}.{ref.name} does not exist "
                                     f"(the LATERAL subquery returns {', '.join(names)})")
        if ref.find_ancestor(exp.Join, exp.Order, exp.Select) is not ref.parent_select:
            raise UnsupportedQueryError(
                f"{name.name}.{ref.name}, of a LATERAL aggregate, in a join's ON or ORDER BY",
                "read it in the select list, WHERE, GROUP BY or HAVING")
        one = inner.copy()
        value = inner.expressions[names.index(folded(ref.this))]
        one.set("expressions", [value.this.copy()])
        if ref.parent is select:  # an output column keeps its name
            ref.replace(exp.Alias(this=exp.Subquery(this=one), alias=ref.this.copy()))
        else:
            ref.replace(exp.Subquery(this=one))
