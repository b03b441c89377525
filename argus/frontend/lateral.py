"""A set-returning function over a FROM item's rows — `x CROSS JOIN LATERAL f(x.…) AS
w(c)`, `x, unnest(x.arr) AS u(v)`, `x JOIN LATERAL … ON TRUE` — as a derived table that
calls it in its select list: `(SELECT x.*, f(x.…) AS c FROM x) AS x`, each row of x one
row per value, as the lateral join gives (Nexmark q5's hopping windows:
`generate_series(t - size + slide, t, slide)`). The selection computing it expands
rows, so it is shared only with a query calling the same function on the same rows
(argus.network.builder: `expands`).

A set of constants is such a function too, of no column: `bid, generate_series(0, 4)
AS k(i)`; `VALUES (1, 'a'), (2, 'b') AS v(x, y)`, read as `unnest(ARRAY[1, 2],
ARRAY['a', 'b']) AS v(x, y)`, whose columns are set-returning calls side by side in
the select list (PostgreSQL steps them together). Written first in FROM, before a
stream it is cross joined with, it trades places with that stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..trees import DIALECT, conjuncts, folded, tree_of

# calls PostgreSQL answers with a set of rows: its IMMUTABLE set-returning functions
# (a query may call no others, frontend.functions), and sqlglot's names for two of them
SET_RETURNING = re.compile(
    r"\b(generate_series|generate_subscripts|unnest|jsonb?_array_elements(_text)?|"
    r"jsonb?_each(_text)?|jsonb?_object_keys|jsonb_path_query|regexp_split_to_table|"
    r"regexp_matches|string_to_table|ts_parse|ts_token_type|(pg|txid)_snapshot_xip)\s*\(",
    re.IGNORECASE)


def expands(sql_text: str) -> bool:
    """Whether an expression calls a set-returning function (one row in, several out)."""
    return SET_RETURNING.search(sql_text) is not None


def without_expansions(sql_text: str) -> str:
    """The expression with each set-returning call (arguments and all) a NULL: what of
    it is computed besides them."""
    tree = tree_of(sql_text)
    if SET_RETURNING.match(tree.sql(DIALECT)):
        return "NULL"
    for call in [f for f in tree.find_all(exp.Func) if SET_RETURNING.match(f.sql(DIALECT))]:
        call.replace(exp.Null())
    return tree.sql(DIALECT)


def lateral_functions(tree: exp.Expr, columns_of: Callable[[exp.Expr], list[str]]
                      ) -> exp.Expr:
    """The parsed `tree` with each FROM list's leading lateral function calls moved into
    derived tables over the FROM item before them. `columns_of(item)`: a FROM item's
    column names."""
    for values in list(tree.find_all(exp.Values)):
        if isinstance(values.parent, (exp.From, exp.Join)):
            values.replace(_as_unnest(values))
    for select in reversed(list(tree.find_all(exp.Select))):  # the innermost first
        _stream_first(select)
        first = select.args["from_"].this if select.args.get("from_") else None
        if first is not None and _is_function_item(first):
            raise UnsupportedQueryError(f"FROM {first.sql(DIALECT)}",
                                        "FROM must name a stream (a set-returning function "
                                        "or VALUES may follow one)")
        while True:
            joins = select.args.get("joins") or []
            found = _function(joins[0]) if joins else None
            if found is None:
                break
            calls, alias = found
            item = select.args["from_"].this
            name = item.alias_or_name
            ident = (item.args["alias"].this if item.args.get("alias") is not None
                     else item.this)  # as written: quoted or folded
            columns = columns_of(item)
            shown = " ".join(call.sql(DIALECT) for call, _ in calls)
            if not columns or "*" in columns:
                raise UnsupportedQueryError(
                    f"LATERAL {shown} after {item.sql(DIALECT)}",
                    "name the columns of the FROM item before it (no SELECT *)")
            for _, column in calls:
                if folded(exp.to_identifier(column)) in map(str.lower, columns):
                    raise UnsupportedQueryError(
                        f"LATERAL {shown} AS {alias}({column})",
                        f"name its column apart from {name}'s columns")
            inner = exp.select(*(exp.Alias(this=call, alias=exp.to_identifier(column))
                                 for call, column in calls)).from_(item.copy())
            _push_down(select, inner, name)
            inner.set("expressions", [
                *(exp.Column(this=exp.to_identifier(c, quoted=True), table=ident.copy())
                  for c in _read_above(select, joins[0], name, columns)),
                *inner.expressions])
            for ref in list(select.find_all(exp.Column)):
                if ref.table and folded(ref.args["table"]) == folded(exp.to_identifier(alias)):
                    ref.set("table", ident.copy())
            select.set("from_", exp.From(this=exp.Subquery(
                this=inner, alias=exp.TableAlias(this=ident.copy()))))
            select.set("joins", joins[1:] or None)
    return tree


def _as_unnest(values: exp.Values) -> exp.Unnest:
    """`(VALUES (1, 'a'), (2, 'b')) AS v(x, y)` as `unnest(ARRAY[1, 2], ARRAY['a', 'b'])
    AS v(x, y)`: the same rows (an array's elements take their common type as a VALUES
    column's do)."""
    rows = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in values.expressions]
    if len({len(r) for r in rows}) != 1:
        raise UnsupportedQueryError(values.sql(DIALECT), "VALUES lists must all have the "
                                    "same number of entries")
    alias = values.args.get("alias")
    if alias is None or len(alias.columns) != len(rows[0]):
        raise UnsupportedQueryError(f"VALUES in FROM without a column for each entry: "
                                    f"{values.sql(DIALECT)}", "name them: AS v(x, y)")
    return exp.Unnest(expressions=[exp.Array(expressions=[r[i].copy() for r in rows])
                                   for i in range(len(rows[0]))], alias=alias.copy())


def _stream_first(select: exp.Select) -> None:
    """A set of constants first in FROM and a FROM item cross joined after it: swapped,
    so that the function is called on that item's rows (a star's columns would come in
    another order: refused)."""
    joins = select.args.get("joins") or []
    first = select.args["from_"].this if select.args.get("from_") else None
    if first is None or not joins or not _is_function_item(first) \
            or _is_function_item(joins[0].this) or _function(joins[0], check=False) is None \
            and (joins[0].side or joins[0].args.get("on") is not None):
        return
    if any(isinstance(e, exp.Star) for e in select.expressions):
        raise UnsupportedQueryError(
            f"SELECT * FROM {first.sql(DIALECT)}, …",
            "write the stream first in FROM, the set of values after it")
    select.args["from_"].set("this", joins[0].this.copy())
    joins[0].set("this", first.copy())
    joins[0].set("kind", None)


def _is_function_item(item: exp.Expr) -> bool:
    return isinstance(item, exp.Unnest) or (isinstance(item, exp.Table)
                                            and isinstance(item.this, exp.Func))


def _read_above(select: exp.Select, call: exp.Join, name: str, columns: list[str]
                ) -> list[str]:
    """The FROM item's columns the query reads besides the function `call` (all of them
    under a star): each row the function expands is copied, so a column no one reads
    is not (Nexmark q5's hopping windows: 2 of the bid's 7 columns, 5 times)."""
    if any(isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star)
           for e in select.expressions):
        return columns
    own = folded(exp.to_identifier(name))
    skip = {id(n) for n in call.walk()}
    read = {c.name.lower() for c in select.find_all(exp.Column) if id(c) not in skip
            and (not c.table or folded(c.args["table"]) == own)}
    return [c for c in columns if c.lower() in read]


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


def _function(join: exp.Join, check: bool = True
              ) -> tuple[list[tuple[exp.Expr, str]], str] | None:
    """([(a call, its column's name)], the alias) of a lateral function join: CROSS, a
    comma, or INNER … ON TRUE; None for any other join. Refused: an outer one, and a
    function of several columns (WITH ORDINALITY) but unnest of several arrays, which
    is one unnest per array side by side."""
    item = join.this
    if isinstance(item, exp.Lateral):
        call, alias = item.this.copy(), item.args.get("alias")
    elif _is_function_item(item):
        call = item.copy() if isinstance(item, exp.Unnest) else item.this.copy()
        alias = item.args.get("alias")
        call.set("alias", None)
    else:
        return None
    on = join.args.get("on")
    if (join.side or "") or not (on is None or (isinstance(on, exp.Boolean) and on.this)):
        if not check:
            return None
        raise UnsupportedQueryError(f"{(join.side or 'INNER').upper()} JOIN LATERAL "
                                    f"{call.sql(DIALECT)} ON {on.sql(DIALECT) if on else ''}",
                                    "a set-returning function is maintained as CROSS JOIN "
                                    "LATERAL (or JOIN LATERAL … ON TRUE)")
    if alias is None:
        raise UnsupportedQueryError(f"LATERAL {call.sql(DIALECT)} without an alias",
                                    "name it: AS w(c)")
    columns = [c.name for c in alias.columns] or [alias.name]
    if isinstance(call, exp.Unnest) and not call.args.get("offset") \
            and len(call.expressions) == len(columns) > 1:
        return [(exp.Unnest(expressions=[array.copy()]), column)
                for array, column in zip(call.expressions, columns)], alias.name
    several = (isinstance(call, exp.Unnest) and (call.args.get("offset")
                                                 or len(call.expressions) > 1))
    if len(columns) > 1 or several:
        raise UnsupportedQueryError(f"LATERAL {call.sql(DIALECT)} of several columns",
                                    "one column per set-returning function, or unnest of "
                                    "one array per column")
    return [(call, columns[0])], alias.name
