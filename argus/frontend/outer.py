"""RIGHT and FULL outer joins, written with the joins argus maintains.

`a RIGHT JOIN b ON c` is `b LEFT JOIN a ON c`: the sides swap (qualify() has already
expanded `*` and named every column by its table's alias, so no output moves).
`a FULL JOIN b ON c` is a derived table: the left join, and the rows of b that no row
of a meets under c, padded with a's NULLs (`UNION ALL … WHERE NOT EXISTS`), so that each
part is maintained as left joins, anti joins and UNION ALL are, and shared like them.
Columns of a and b above the join are read from the derived table, named
`"<alias>.<column>"`.

A RIGHT or FULL join after other joins has the whole FROM list before it as its left
side: that list becomes a derived table first (its columns named as above), and the
join is then its first.

A LEFT join whose padded rows the WHERE drops is an inner join (`inner_when_rejected`).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from ..trees import conjuncts, unparen

PAD = "argus_pad"


def outer_joins(tree: exp.Expr, columns_of: Callable[[exp.Expr], list[str]]
                ) -> tuple[exp.Expr, set[str]]:
    """The qualified `tree` with its RIGHT and FULL joins rewritten; and the output
    names to keep (the derived tables' columns; and a projection `_0.k AS k` read
    from one is still named k). `columns_of(item)`: a FROM item's column names."""
    keep: set[str] = set()
    # the innermost first: a FULL join's sides are copied into its derived table
    for number, select in enumerate(reversed(list(tree.find_all(exp.Select)))):
        for step in range(len(select.args.get("joins") or [])):
            joins = select.args.get("joins") or []
            at = next((i for i, j in enumerate(joins)
                       if (j.side or "").upper() in ("RIGHT", "FULL")), None)
            if at is None:
                break
            if at > 0:  # the joins before it are one side: a derived table
                keep |= _prefix(tree, select, at, f"argus_pre{number}_{step}", columns_of)
                joins = select.args["joins"]
            first, left = joins[0], select.args["from_"].this
            right, on = first.this, first.args.get("on") or exp.true()
            if first.side.upper() == "RIGHT":
                select.set("from_", exp.From(this=right.copy()))
                select.set("joins", [exp.Join(this=left.copy(), side="LEFT", on=on.copy()),
                                     *joins[1:]])
                continue
            name = f"argus_full{number}_{step}"
            sides = {left.alias_or_name: columns_of(left),
                     right.alias_or_name: columns_of(right)}
            derived = _full_join(left, right, on, sides)
            keep |= _read_from(tree, name, sides) | set(derived.named_selects)
            select.set("from_", exp.From(this=exp.Subquery(
                this=derived, alias=exp.TableAlias(this=exp.to_identifier(name, quoted=True)))))
            select.set("joins", joins[1:] or None)
    return tree, keep


def _prefix(tree: exp.Expr, select: exp.Select, at: int, name: str,
            columns_of: Callable[[exp.Expr], list[str]]) -> set[str]:
    """The FROM item and the joins before the `at`-th as one derived table `name`
    (every column of theirs named `"<alias>.<column>"`), so that a RIGHT or FULL join
    after them is a first join; the output names to keep."""
    joins = select.args["joins"]
    items = [select.args["from_"].this, *(j.this for j in joins[:at])]
    sides = {item.alias_or_name: columns_of(item) for item in items}
    derived = exp.select(*(exp.alias_(exp.column(c, table=alias, quoted=True), f"{alias}.{c}",
                                      quoted=True)
                           for alias, columns in sides.items() for c in columns))
    derived = derived.from_(items[0].copy())
    derived.set("joins", [j.copy() for j in joins[:at]])
    keep = _read_from(tree, name, sides)
    select.set("from_", exp.From(this=exp.Subquery(
        this=derived, alias=exp.TableAlias(this=exp.to_identifier(name, quoted=True)))))
    select.set("joins", joins[at:])
    return keep | set(derived.named_selects)


def _full_join(left: exp.Expr, right: exp.Expr, on: exp.Expr,
               sides: dict[str, list[str]]) -> exp.Expr:
    (la, lcols), (ra, rcols) = sides.items()

    def named(alias: str, column: str, value: exp.Expr | None = None) -> exp.Alias:
        value = value or exp.column(column, table=alias, quoted=True)
        return exp.alias_(value, f"{alias}.{column}", quoted=True)

    both = [named(la, c) for c in lcols] + [named(ra, c) for c in rcols]
    matched = exp.select(*both).from_(left.copy()).join(right.copy(), on=on.copy(),
                                                        join_type="LEFT")
    # the unmatched rows of the right side, padded by a left join that meets nothing
    # (its NULLs typed as the left side's columns, unknown here)
    pad = left.copy()
    pad.set("alias", exp.TableAlias(this=exp.to_identifier(PAD, quoted=True)))
    alone = (exp.select(*[named(la, c, exp.column(c, table=PAD, quoted=True)) for c in lcols],
                        *[named(ra, c) for c in rcols])
             .from_(right.copy())
             .join(pad, on=exp.false(), join_type="LEFT")
             .where(exp.Not(this=exp.Exists(
                 this=exp.select("1").from_(left.copy()).where(on.copy())))))
    return exp.union(matched, alone, distinct=False)


def _read_from(tree: exp.Expr, name: str, sides: dict[str, list[str]]) -> set[str]:
    """Columns of the two sides, everywhere in `tree`, read from the derived table
    `name` instead; the output names of projections that were such columns."""
    keep = set()
    for column in list(tree.find_all(exp.Column)):
        if column.table not in sides:
            continue
        parent = column.parent
        if isinstance(parent, exp.Alias) and parent.this is column:
            keep.add(parent.alias)
        column.replace(exp.column(f"{column.table}.{column.name}", table=name, quoted=True))
    return keep


# Comparisons, which are NULL when an operand is: a WHERE term comparing a column of a
# LEFT join's right side drops the rows the join padded with NULLs.
_STRICT = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div)  # (NULL when an operand is)


def inner_when_rejected(tree: exp.Expr) -> exp.Expr:
    """Each LEFT JOIN whose right side a WHERE term compares (`b.y = a.x`, `b.y > 3`,
    `b.y IS NOT NULL`) written as an inner join: the rows it would pad fail that term.
    A scalar subquery compared in the WHERE, unnested as `LEFT JOIN … ON TRUE`
    (argus.frontend.scalar), then joins on the comparison, and keeps only the rows that
    pass it: TPC-H Q15's `total_revenue = (SELECT max(...))` kept every supplier paired
    with the maximum, and wrote them all again whenever the maximum changed. Run after
    `outer_joins`, which leaves no RIGHT or FULL join."""
    for select in tree.find_all(exp.Select):
        where = select.args.get("where")
        if where is None:
            continue
        terms = conjuncts(where.this)
        for join in select.args.get("joins") or []:
            if (join.side or "").upper() != "LEFT" or isinstance(join.this, exp.Lateral):
                continue
            alias = join.this.alias_or_name
            if any(_compares(term, alias) for term in terms):
                join.set("side", None)
                join.set("kind", None)
    return tree


def _compares(term: exp.Expr, alias: str) -> bool:
    """Whether `term` is NULL or false when the columns of `alias` are NULL."""
    if isinstance(term, _STRICT):
        return _padded(term.this, alias) or _padded(term.expression, alias)
    negated = isinstance(term, exp.Not)
    test = term.this if negated else term
    return (isinstance(test, exp.Is) and isinstance(test.expression, exp.Null)
            and negated != bool(test.args.get("negate")) and _padded(test.this, alias))


def _padded(operand: exp.Expr, alias: str) -> bool:
    """Whether `operand` is NULL when the columns of `alias` are: one of them, NULL,
    arithmetic on either, or a CASE that then takes no branch and has no ELSE but such
    an operand (a correlated scalar subquery's value, `CASE WHEN s.argus_hit THEN
    s.argus_value ELSE 0.2 * NULL END`, argus.frontend.scalar; TPC-H Q2, Q17, Q20)."""
    operand = unparen(operand)
    if isinstance(operand, exp.Column):
        return operand.table == alias
    if isinstance(operand, exp.Cast):
        return _padded(operand.this, alias)
    if isinstance(operand, _ARITHMETIC):
        return _padded(operand.this, alias) or _padded(operand.expression, alias)
    if not isinstance(operand, exp.Case) or operand.args.get("this") is not None:
        return isinstance(operand, exp.Null)
    default = operand.args.get("default")
    return (all(_padded(branch.this, alias) for branch in operand.args.get("ifs") or [])
            and (default is None or _padded(default, alias)))
