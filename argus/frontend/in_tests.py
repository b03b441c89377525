"""IN and EXISTS tests over subqueries as the shapes argus maintains: `x [NOT] IN
(subquery)` as semi-joins, exact NOT EXISTS or counts in SQL's three values, and
correlated INTERSECT / EXCEPT read keyed from one uncorrelated set operation (the
module docstring of frontend.scalar says how each is rewritten)."""

from __future__ import annotations

from sqlglot import exp

from ..trees import conjuncts
from .scopes import aggregates, branches, correlation, defined, local, name_output, tables_of


def keyed_set_operations(select: exp.Select) -> set[str]:
    """EXISTS or IN over a correlated INTERSECT or EXCEPT [ALL], every branch correlated
    by equalities with the same outer expressions: each branch returns its side of them
    first, and the set operation runs once over all outer rows, uncorrelated — keyed,
    its rows for one outer row are exactly the branches' rows for that row — read where
    those columns equal the outer expressions. Returns the derived tables' column
    names."""
    names = set()
    for test in list(select.find_all(exp.Exists, exp.In)):
        holder = test if isinstance(test, exp.Exists) else test.args.get("query")
        query = holder.this if holder is not None else None
        query = query.this if isinstance(query, exp.Subquery) else query
        if test.parent_select is not select or not isinstance(query, exp.SetOperation) \
                or not (tables_of(query) - defined(query)):
            continue
        outer = local(select)
        keyed = [_branch_keys(b, outer) for b in branches(query)]
        if any(k is None for k in keyed):
            continue  # the planner says why
        theirs = [t for _, t in keyed[0]]
        if any(sorted(t.sql() for _, t in k) != sorted(t.sql() for t in theirs)
               for k in keyed):
            continue
        inner = query.copy()
        leaves = branches(inner)
        for leaf, key in zip(leaves, keyed):
            mine = {t.sql(): m for m, t in key}
            kept = [c for c in conjuncts(leaf.args["where"].this) if not (tables_of(c) & outer)]
            leaf.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
            data = [e.this if isinstance(e, exp.Alias) else e for e in leaf.expressions]
            leaf.set("expressions", [
                *(exp.alias_(mine[t.sql()].copy(), f"argus_x{j}", quoted=True)
                  for j, t in enumerate(theirs)),
                *(exp.alias_(e, f"argus_c{i}", quoted=True) for i, e in enumerate(data))])
        derived = exp.Subquery(this=inner, alias=exp.TableAlias(
            this=exp.to_identifier("argus_u", quoted=True)))
        width = len(leaves[0].expressions) - len(theirs)
        read = exp.select(*(exp.column(f"argus_c{i}", table="argus_u", quoted=True)
                            for i in range(width))).from_(derived).where(exp.and_(*(
                                exp.EQ(this=exp.column(f"argus_x{j}", table="argus_u",
                                                       quoted=True), expression=t.copy())
                                for j, t in enumerate(theirs))))
        names |= set(leaves[0].named_selects)
        if isinstance(test, exp.Exists):
            test.set("this", read)
        else:
            holder.set("this", read)
    return names


def _branch_keys(branch: exp.Expr, outer: set[str]
                 ) -> list[tuple[exp.Expr, exp.Expr]] | None:
    """A set operation's branch correlated by `inner = outer` terms of its WHERE alone
    (no aggregate): (inner, outer) for each; None for any other branch."""
    if not isinstance(branch, exp.Select) or branch.args.get("group") or \
            aggregates(branch) or not branch.args.get("where"):
        return None
    rest = branch.copy()
    rest.set("where", None)
    if tables_of(rest) & outer:
        return None
    keys = []
    for c in conjuncts(branch.args["where"].this):
        if not (tables_of(c) & outer):
            continue
        pair = correlation(c, outer)
        if pair is None or c.find(exp.Select):
            return None
        keys.append(pair[::-1])
    return keys or None


def _readable(test: exp.In) -> tuple[exp.Expr, set[str]]:
    """The IN test's subquery, a set operation or an uncorrelated aggregate in it read
    from a derived table instead (its columns named argus_c0, …, returned)."""
    query = test.args["query"].this
    grouped = isinstance(query, exp.Select) and (query.args.get("group")
                                                  or aggregates(query))
    uncorrelated = not (tables_of(query) - defined(query))
    if not (isinstance(query, exp.SetOperation) or (grouped and uncorrelated)):
        return query, set()
    inner = query.copy()
    first = inner
    while isinstance(first, exp.SetOperation):  # it names a set operation's columns
        first = first.this
    first.set("expressions", [exp.alias_(e.this if isinstance(e, exp.Alias) else e,
                                         f"argus_c{i}", quoted=True)
                              for i, e in enumerate(first.expressions)])
    derived = exp.Subquery(this=inner, alias=exp.TableAlias(
        this=exp.to_identifier("argus_u", quoted=True)))
    query = exp.select(*(exp.column(c, table="argus_u", quoted=True)
                         for c in first.named_selects)).from_(derived)
    test.args["query"].set("this", query)
    return query, set(first.named_selects)


def in_anywhere(select: exp.Select) -> set[str]:
    """`x IN (SELECT y …)` other than as an AND-ed WHERE term (under OR or NOT, in a
    CASE, the select list or HAVING) as counts. Where only AND and OR stand between it
    and the WHERE or HAVING, a NULL drops the row as a FALSE does: it is `(SELECT
    count(*) … WHERE y = x) > 0`, rows of values `(a, b) IN` too. Elsewhere, in SQL's
    three values exactly: TRUE when some y equals x; else NULL when x is NULL and there
    is a y, or when some y is NULL; else FALSE (no y at all, x NULL or not). `NOT` over
    it is then NOT IN."""
    where = select.args.get("where")
    terms = conjuncts(where.this if where else None)
    joined = {id(t) for t in terms} | {id(t.this) for t in terms if isinstance(t, exp.Not)}
    names = set()
    for test in list(select.find_all(exp.In)):
        if id(test) in joined or test.parent_select is not select \
                or not isinstance(test.args.get("query"), exp.Subquery):
            continue
        xs = test.this.expressions if isinstance(test.this, exp.Tuple) else [test.this]
        if test.this.find(exp.AggFunc, exp.Window) or test.args["query"].this.find(exp.Window):
            continue  # (it cannot move into a WHERE) the planner says why
        positive = _positive(test, select)
        if len(xs) > 1 and not positive:
            continue  # the planner says why
        query, derived = _readable(test)
        if not isinstance(query, exp.Select) or len(query.expressions) != len(xs) \
                or query.args.get("group") or aggregates(query):
            continue  # the planner says why
        names |= derived
        ys = [y.this if isinstance(y, exp.Alias) else y for y in query.expressions]
        equal = exp.and_(*(exp.EQ(this=y.copy(), expression=x.copy())
                           for x, y in zip(xs, ys)))
        if positive:
            replaced = exp.paren(_any(query, equal))
            test.replace(replaced)
            names |= name_output(replaced, select, "?column?")
            continue
        x, y = xs[0], ys[0]
        three_valued = exp.Case(ifs=[
            exp.If(this=_any(query, equal), true=exp.true()),
            exp.If(this=exp.and_(exp.Is(this=x.copy(), expression=exp.null()),
                                 _any(query, None)), true=exp.null()),
            exp.If(this=_any(query, exp.Is(this=y.copy(), expression=exp.null())),
                   true=exp.null())], default=exp.false())
        replaced = exp.paren(three_valued)
        test.replace(replaced)
        names |= name_output(replaced, select, "?column?")
    return names


def _positive(test: exp.Expr, select: exp.Select) -> bool:
    """Whether only AND, OR and parentheses stand between `test` and `select`'s WHERE
    or HAVING: there its NULL and FALSE alike drop the row."""
    node = test.parent
    while isinstance(node, (exp.And, exp.Or, exp.Paren)):
        node = node.parent
    return isinstance(node, (exp.Where, exp.Having)) and node.parent is select


def _any(query: exp.Select, condition: exp.Expr | None) -> exp.Expr:
    """`(SELECT count(*) FROM … WHERE … AND condition) > 0`."""
    counted = query.copy()
    counted.set("expressions", [exp.Count(this=exp.Star())])
    counted.set("distinct", None)
    if condition is not None:
        counted.where(condition, copy=False)
    return exp.GT(this=exp.Subquery(this=counted), expression=exp.Literal.number(0))


def in_lists(select: exp.Select) -> set[str]:
    """`select`'s AND-ed WHERE terms `x [NOT] IN (subquery)`: a set operation, or an
    uncorrelated aggregate, inside read from a derived table; a row of values
    `(a, b) IN (…)` as EXISTS with an equality per column; NOT IN as an exact
    NOT EXISTS. Returns the derived tables' column names."""
    where = select.args.get("where")
    names = set()
    for term in conjuncts(where.this if where else None):
        negated = isinstance(term, exp.Not)
        test = term.this if negated else term
        if not (isinstance(test, exp.In) and isinstance(test.args.get("query"), exp.Subquery)):
            continue
        query, derived = _readable(test)
        names |= derived
        xs = test.this.expressions if isinstance(test.this, exp.Tuple) else [test.this]
        if not isinstance(query, exp.Select) or len(query.expressions) != len(xs) \
                or query.args.get("group") or aggregates(query):
            continue  # the planner says why
        if not negated and len(xs) == 1:
            continue  # a semi-join as it is
        ys = [y.this if isinstance(y, exp.Alias) else y for y in query.expressions]
        if not negated:
            meets = exp.and_(*(exp.EQ(this=y.copy(), expression=x.copy())
                               for x, y in zip(xs, ys)))
        elif len(xs) == 1:  # no y equals x, no y is NULL, x is not NULL
            meets = exp.or_(exp.EQ(this=ys[0].copy(), expression=xs[0].copy()),
                            exp.Is(this=ys[0].copy(), expression=exp.null()),
                            exp.Is(this=xs[0].copy(), expression=exp.null()))
        else:  # a row of values is NOT IN when it differs from every row: TRUE, not NULL
            differs = exp.or_(*(exp.NEQ(this=y.copy(), expression=x.copy())
                                for x, y in zip(xs, ys)))
            meets = exp.Not(this=exp.Is(this=exp.paren(differs), expression=exp.true()))
        query = query.copy()
        query.set("expressions", [exp.Literal.number(1)])
        query.set("distinct", None)
        query.where(exp.paren(meets), copy=False)
        found = exp.Exists(this=query)
        term.replace(exp.Not(this=found) if negated else found)
    return names
