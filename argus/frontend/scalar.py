"""Subqueries in expressions as the shapes argus maintains already: scalar subqueries
as joins (unnesting, after Kim and after Neumann and Kemper), EXISTS outside an AND-ed
WHERE term as a count, IN lists as semi-joins and NOT IN as NOT EXISTS.

A scalar subquery that is one aggregate without GROUP BY returns one row (none when its
HAVING fails): uncorrelated, it is a derived table joined by `LEFT JOIN … ON TRUE`, and
the expression reads its column. Correlated by equalities `outer = inner` in its WHERE
(TPC-H Q2, Q17, Q20), it becomes the same aggregate grouped by the inner sides, joined on
them: at most one group meets each outer row. No group met is the aggregate over no
rows, which the rewritten expression gives itself: the select list with each count as
0 and each other aggregate as NULL (the "count bug" of unnesting). A scalar subquery of
one column and no aggregate is the mode of its rows, with a HAVING that raises
PostgreSQL's cardinality error when there are several (`_one_row`): the cycle that
finds them fails for that query alone, as the query run again would fail.

EXISTS under OR or NOT (or outside WHERE) is a count compared with 0, unnested so;
IN there is counts too, in SQL's three values (`in_tests.in_anywhere`).

`(a, b) IN (SELECT x, y …)` is EXISTS (… WHERE x = a AND y = b); a set operation or an
uncorrelated aggregate in IN is read from a derived table. `x NOT IN (SELECT y …)` holds
when no y equals x, no y is NULL and x is not NULL, or when there is no y at all:
`NOT EXISTS (SELECT … WHERE y = x OR y IS NULL OR x IS NULL)`, exactly, as a WHERE
condition joined by AND (where a NULL and a false alike drop the row); a row of values,
when `(y1 <> x1 OR …)` is TRUE for every row.
"""

from __future__ import annotations

import itertools

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..trees import conjuncts
from .in_tests import in_anywhere, in_lists, keyed_set_operations
from .relations import figure_name
from .scopes import (aggregates, branches, correlation, defined, local, name_output,
                     tables_of)

HIT = "argus_hit"
NOT_EQUALITIES = "a scalar subquery correlated other than by equalities in its WHERE"
VALUE = "argus_value"


def unnest_subqueries(tree: exp.Expr) -> tuple[exp.Expr, set[str]]:
    """The qualified `tree` rewritten; and the names of the derived tables' columns."""
    names = (f"argus_sq{n}" for n in itertools.count())
    columns = set()
    for select in reversed(list(tree.find_all(exp.Select))):  # the innermost first
        _on_subqueries(select)
        _union_tests(select)
        columns |= keyed_set_operations(select)
        columns |= in_lists(select)
        columns |= in_anywhere(select)
        columns |= _counted_exists(select)
        scalars = [s for s in select.find_all(exp.Subquery) if _scalar(s, select)]
        if scalars and select.args.get("from_") is None:  # (was a KeyError; a helper)
            raise UnsupportedQueryError("the query reads no stream: every SELECT needs a "
                                        "FROM clause")
        for sub in scalars:
            columns |= _unnest(select, sub, next(names))
    return tree, columns


def _on_subqueries(select: exp.Select) -> None:
    """A subquery in an inner join's ON: its terms move to the WHERE, where they mean
    the same. In an outer join's ON it is refused: the rewrites above read a subquery
    through a join of their own, which an ON cannot see."""
    joins = select.args.get("joins") or []
    for join in joins:
        on = join.args.get("on")
        if on is None or not on.find(exp.Select):
            continue
        if join.side or any(j.side in ("RIGHT", "FULL") for j in joins):  # (a WHERE
            # below a RIGHT or FULL join would drop the rows it pads)
            raise UnsupportedQueryError(
                f"a subquery in the ON condition of a {join.side or 'INNER'} JOIN"
                + ("" if join.side else " beside a RIGHT or FULL JOIN"),
                "filter the joined side in a derived table: LEFT JOIN (SELECT … WHERE "
                "x IN (…)) AS s ON …")
        moved, kept = [], []
        for term in conjuncts(on):
            (moved if term.find(exp.Select) else kept).append(term)
        join.set("on", exp.and_(*kept) if kept else exp.true())
        where = select.args.get("where")
        select.set("where", exp.Where(this=exp.and_(
            *([where.this] if where else []), *(t.copy() for t in moved))))


def _scalar(sub: exp.Subquery, select: exp.Select) -> bool:
    return (sub.parent_select is select
            and not isinstance(sub.parent, (exp.From, exp.Join, exp.Any, exp.All))
            and not (isinstance(sub.parent, exp.In) and sub.arg_key == "query"))


def _unnest(select: exp.Select, sub: exp.Subquery, name: str) -> set[str]:
    inner, several, grouped, per_row = _one_value(select, sub)
    outer = tables_of(inner) - defined(inner)
    if outer - local(select):
        raise UnsupportedQueryError("subqueries correlated over more than one level")
    keys, kept = [], []
    for c in conjuncts(inner.args["where"].this if inner.args.get("where") else None):
        if not (tables_of(c) & outer):
            kept.append(c)
            continue
        pair = correlation(c, outer)
        if pair is None:
            raise UnsupportedQueryError(NOT_EQUALITIES)
        keys.append(pair)
    projection = inner.expressions[0]
    projection = projection.this if isinstance(projection, exp.Alias) else projection
    if keys and inner.args.get("having"):
        raise UnsupportedQueryError("HAVING in a correlated scalar subquery")
    if several:
        _at_most_one_row(inner)
    if outer and not keys or any(c.table in outer for c in projection.find_all(exp.Column)):
        raise UnsupportedQueryError(NOT_EQUALITIES)
    for join in select.args.get("joins") or []:  # `FROM a, b LEFT JOIN s ON …a…` would
        if not (join.side or join.kind or join.args.get("on") or join.args.get("using")):
            join.set("kind", "CROSS")  # let s meet only b: a list of explicit joins
    named = name_output(sub, select, figure_name(sub))
    value = _joined_value(select, sub, inner, name, projection, keys, kept, outer, several)
    if grouped and not per_row:  # one value per group: grouping by it changes no group
        group = select.args["group"]
        group.set("expressions", [*group.expressions, value.copy()]
                  + ([exp.column(HIT, table=name, quoted=True)] if keys else []))
    return set(inner.named_selects) | named


def _one_value(select: exp.Select, sub: exp.Subquery
            ) -> tuple[exp.Select, bool, bool, bool]:
    """The subquery as one value (a copy: counted to one row when it has no aggregate),
    whether it had no aggregate (`several`), whether the query groups, and whether the
    value is one per row (in WHERE, or an aggregate's argument), not one per group."""
    inner = sub.this
    if not isinstance(inner, exp.Select) or len(inner.expressions) != 1 \
            or inner.args.get("group") or inner.args.get("distinct") \
            or inner.args.get("having"):
        raise UnsupportedQueryError(
            "a scalar subquery of several columns, or with GROUP BY, DISTINCT or HAVING",
            "a scalar subquery is maintained when it is one value: an aggregate, or a "
            "column of at most one row")
    several = not aggregates(inner)
    if several:  # its rows counted: its value, or PostgreSQL's error past one row
        inner = _one_row(inner)
    where = select.args.get("where")
    grouped = bool(select.args.get("group"))
    per_row = (where is not None and sub.find_ancestor(exp.Where) is where) or isinstance(
        sub.find_ancestor(exp.AggFunc, exp.Select), exp.AggFunc)
    if not (where and sub.find_ancestor(exp.Where) is where) and not grouped and \
            aggregates(select):
        raise UnsupportedQueryError(
            "a scalar subquery in the select list or HAVING of an aggregate without GROUP BY")
    return inner.copy(), several, grouped, per_row


def _joined_value(select: exp.Select, sub: exp.Subquery, inner: exp.Select, name: str,
                  projection: exp.Expr, keys, kept, outer, several: bool) -> exp.Column:
    """The subquery LEFT JOINed to the query (uncorrelated: on TRUE; correlated: grouped
    by its keys, on them), and the subquery replaced by its value there."""
    alias = exp.TableAlias(this=exp.to_identifier(name, quoted=True))
    value = exp.column(VALUE, table=name, quoted=True)
    if not keys:
        inner.set("expressions", [exp.alias_(projection.copy(), VALUE, quoted=True)])
        select.join(exp.Subquery(this=inner, alias=alias), on=exp.true(), join_type="LEFT",
                    copy=False)
        sub.replace(value)
        return value
    columns = [exp.alias_(theirs.copy(), f"argus_k{i}", quoted=True)
               for i, (_, theirs) in enumerate(keys)]
    inner.set("expressions", [*columns, exp.alias_(projection.copy(), VALUE, quoted=True),
                              exp.alias_(exp.true(), HIT, quoted=True)])
    inner.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    inner.set("group", exp.Group(expressions=[theirs.copy() for _, theirs in keys]))
    if tables_of(inner) & outer:  # in a join, a subquery
        raise UnsupportedQueryError(NOT_EQUALITIES)
    on = exp.and_(*(exp.EQ(this=exp.column(f"argus_k{i}", table=name, quoted=True),
                           expression=mine.copy()) for i, (mine, _) in enumerate(keys)))
    select.join(exp.Subquery(this=inner, alias=alias), on=on, join_type="LEFT", copy=False)
    sub.replace(exp.Case(ifs=[exp.If(this=exp.column(HIT, table=name, quoted=True),
                                     true=value)],
                         default=exp.null() if several else _over_no_rows(projection)))
    return value


def _one_row(inner: exp.Select) -> exp.Select:
    """A scalar subquery without an aggregate as one: the value of its one row (NULL
    for none; mode() is that value, for any type with an order). Its HAVING (added by
    `_at_most_one_row` once the correlation is read) raises PostgreSQL's cardinality
    error when several rows meet an outer row: in the cycle that finds them, which
    isolates the query, as running the query again would fail."""
    projection = inner.expressions[0]
    value = projection.this if isinstance(projection, exp.Alias) else projection
    mode = exp.WithinGroup(this=exp.Anonymous(this="mode", expressions=[]),
                           expression=exp.Order(expressions=[exp.Ordered(this=value.copy())]))
    counted = inner.copy()
    counted.set("expressions", [exp.alias_(mode, projection.alias_or_name, quoted=True)
                                if isinstance(projection, exp.Alias) else mode])
    return counted


def _at_most_one_row(inner: exp.Select) -> None:
    inner.set("having", exp.Having(this=exp.Dot(
        this=exp.to_identifier("argus"), expression=exp.Anonymous(
            this="one_row", expressions=[exp.Count(this=exp.Star()), exp.true()]))))


def _over_no_rows(projection: exp.Expr) -> exp.Expr:
    """The aggregate expression's value over no rows: counts 0, other aggregates NULL."""
    def empty(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Count):
            return exp.Literal.number(0)
        if isinstance(node, exp.AggFunc):
            return exp.null()
        return node
    return exp.Paren(this=projection.copy().transform(empty))


def _counted_exists(select: exp.Select) -> set[str]:
    """EXISTS (…) other than as an AND-ed WHERE term (under OR or NOT, in a CASE, in
    the select list) as `(SELECT count(*) …) > 0`, a scalar subquery: EXISTS is never
    NULL, and neither is the count (0 for no row)."""
    where = select.args.get("where")
    terms = conjuncts(where.this if where else None)
    joined = {id(t) for t in terms} | {id(t.this) for t in terms if isinstance(t, exp.Not)}
    names = set()
    for test in list(select.find_all(exp.Exists)):
        query = test.this
        if id(test) in joined or test.parent_select is not select \
                or not isinstance(query, exp.Select) or query.args.get("group") \
                or query.args.get("having") or aggregates(query):
            continue
        counted = query.copy()
        counted.set("expressions", [exp.Count(this=exp.Star())])
        counted.set("distinct", None)
        compared = exp.paren(exp.GT(this=exp.Subquery(this=counted),
                                    expression=exp.Literal.number(0)))
        test.replace(compared)
        names |= name_output(compared, select, "exists")
    return names


def _union_tests(select: exp.Select) -> None:
    """EXISTS over a UNION [ALL] as an OR of EXISTS, one per branch; a correlated
    `x IN (… UNION …)` as an OR of INs (in SQL's three values alike: TRUE when one
    is, else NULL when one is). An uncorrelated one is read from a derived table
    (`in_tests._readable`)."""
    for test in list(select.find_all(exp.Exists, exp.In)):
        query = test.this if isinstance(test, exp.Exists) else test.args.get("query")
        query = query.this if isinstance(query, exp.Subquery) else query
        if test.parent_select is not select or not isinstance(query, exp.Union):
            continue
        if isinstance(test, exp.In) and not (tables_of(query) - defined(query)):
            continue
        parts = branches(query, exp.Union)
        if not all(isinstance(b, exp.Select) for b in parts):
            continue
        tests = [exp.Exists(this=b.copy()) if isinstance(test, exp.Exists) else
                 exp.In(this=test.this.copy(), query=exp.Subquery(this=b.copy()))
                 for b in parts]
        test.replace(exp.paren(exp.or_(*tests)))
