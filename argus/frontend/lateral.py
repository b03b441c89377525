"""A set-returning function over a FROM item's rows — `x CROSS JOIN LATERAL f(x.…) AS
w(c)`, `x, unnest(x.arr) AS u(v)`, `x JOIN LATERAL … ON TRUE` — as a derived table that
calls it in its select list: `(SELECT x.*, f(x.…) AS c FROM x) AS x`, each row of x one
row per value, as the lateral join gives (Nexmark q5's hopping windows:
`generate_series(t - size + slide, t, slide)`). The selection computing it expands
rows, so it is shared only with a query calling the same function on the same rows
(argus.network.builder: `expands`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..trees import DIALECT, conjuncts, folded

# calls PostgreSQL answers with a set of rows (and sqlglot's names for two of them)
SET_RETURNING = re.compile(
    r"\b(generate_series|unnest|jsonb?_array_elements(_text)?|jsonb?_each(_text)?|"
    r"jsonb?_object_keys|regexp_split_to_table|regexp_matches|string_to_table)\s*\(",
    re.IGNORECASE)


def expands(sql_text: str) -> bool:
    """Whether an expression calls a set-returning function (one row in, several out)."""
    return SET_RETURNING.search(sql_text) is not None


def lateral_functions(tree: exp.Expr, columns_of: Callable[[exp.Expr], list[str]]
                      ) -> exp.Expr:
    """The parsed `tree` with each FROM list's leading lateral function calls moved into
    derived tables over the FROM item before them. `columns_of(item)`: a FROM item's
    column names."""
    for select in reversed(list(tree.find_all(exp.Select))):  # the innermost first
        while True:
            joins = select.args.get("joins") or []
            found = _function(joins[0]) if joins else None
            if found is None:
                break
            call, column, alias = found
            item = select.args["from_"].this
            name = item.alias_or_name
            columns = columns_of(item)
            if not columns or "*" in columns:
                raise UnsupportedQueryError(
                    f"LATERAL {call.sql(DIALECT)} after {item.sql(DIALECT)}",
                    "name the columns of the FROM item before it (no SELECT *)")
            if folded(exp.to_identifier(column)) in map(str.lower, columns):
                raise UnsupportedQueryError(
                    f"LATERAL {call.sql(DIALECT)} AS {alias}({column})",
                    f"name its column apart from {name}'s columns")
            inner = exp.select(*(exp.column(c, table=name, quoted=True) for c in columns),
                               exp.Alias(this=call, alias=exp.to_identifier(column))
                               ).from_(item.copy())
            _push_down(select, inner, name)
            for ref in list(select.find_all(exp.Column)):
                if ref.table and folded(ref.args["table"]) == folded(exp.to_identifier(alias)):
                    ref.set("table", exp.to_identifier(name))
            select.set("from_", exp.From(this=exp.Subquery(
                this=inner, alias=exp.TableAlias(this=exp.to_identifier(name)))))
            select.set("joins", joins[1:] or None)
    return tree


def _push_down(select: exp.Select, inner: exp.Select, name: str) -> None:
    """The WHERE terms that read only the FROM item's columns (written `name.column`)
    filter its rows before the function is called on them, as PostgreSQL applies them
    below a lateral function: a row they drop must not make the function fail."""
    where = select.args.get("where")
    if where is None:
        return
    below, above = [], []
    for term in conjuncts(where.this):
        columns = list(term.find_all(exp.Column))
        local = columns and all(c.table and folded(c.args["table"]) == folded(
            exp.to_identifier(name)) for c in columns)
        if local and not term.find(exp.Select, exp.AggFunc, exp.Window):
            below.append(term)
        else:
            above.append(term)
    if below:
        inner.where(exp.and_(*(t.copy() for t in below)), copy=False)
        select.set("where", exp.Where(this=exp.and_(*above)) if above else None)


def _function(join: exp.Join) -> tuple[exp.Expr, str, str] | None:
    """(the call, its column's name, its alias) of a lateral function join: CROSS, a
    comma, or INNER … ON TRUE; None for any other join. Refused: an outer one, and a
    function giving several columns (WITH ORDINALITY, unnest of several arrays)."""
    item = join.this
    if isinstance(item, exp.Lateral):
        call, alias = item.this.copy(), item.args.get("alias")
    elif isinstance(item, exp.Unnest) or (isinstance(item, exp.Table)
                                          and isinstance(item.this, exp.Func)):
        call = item.copy() if isinstance(item, exp.Unnest) else item.this.copy()
        alias = item.args.get("alias")
        call.set("alias", None)
    else:
        return None
    on = join.args.get("on")
    if (join.side or "") or not (on is None or (isinstance(on, exp.Boolean) and on.this)):
        raise UnsupportedQueryError(f"{(join.side or 'INNER').upper()} JOIN LATERAL "
                                    f"{call.sql(DIALECT)} ON {on.sql(DIALECT) if on else ''}",
                                    "a set-returning function is maintained as CROSS JOIN "
                                    "LATERAL (or JOIN LATERAL … ON TRUE)")
    if alias is None:
        raise UnsupportedQueryError(f"LATERAL {call.sql(DIALECT)} without an alias",
                                    "name it: AS w(c)")
    columns = alias.columns
    several = (isinstance(call, exp.Unnest) and (call.args.get("offset")
                                                 or len(call.expressions) > 1))
    if len(columns) > 1 or several:
        raise UnsupportedQueryError(f"LATERAL {call.sql(DIALECT)} of several columns",
                                    "one column per set-returning function")
    return call, (columns[0].name if columns else alias.name), alias.name
