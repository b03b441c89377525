"""From SQL text to a validated, canonical query: parse with sqlglot, refuse what the
engine does not maintain, resolve columns against the stream schemas, and rename table
aliases to the standard aliases (t1, …) that node SQL uses.

Everything here is pure: no database access. What only PostgreSQL can check (types,
function volatility) is checked at registration by `argus.registry`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from .errors import (QueryError, QuerySyntaxError, UnknownColumnError, UnknownStreamError,
                     UnsupportedQueryError)
from .names import fold, std_alias
from .plan import Output, Plan, Scan, Select

DIALECT = "postgres"


@dataclass(frozen=True)
class StreamSchema:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, PostgreSQL type), in declared order
    time_column: str | None = None

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


@dataclass(frozen=True)
class Analyzed:
    canonical: str  # the query as argus understood it, over the streams by name
    streams: tuple[str, ...]
    plan: Output
    functions: frozenset[str]  # names of the functions it calls, for the volatility check


# Constructs refused at registration, in the order they are looked for. Each later
# capability removes its line here and adds a rule to the planner.
UNSUPPORTED: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.With, "WITH (common table expressions)"),
    (exp.Join, "JOIN"),
    (exp.Window, "window functions (OVER)"),
    (exp.AggFunc, "aggregate functions"),
    (exp.Group, "GROUP BY"),
    (exp.Having, "HAVING"),
    (exp.Distinct, "DISTINCT"),
    (exp.Order, "ORDER BY"),
    (exp.Limit, "LIMIT"),
    (exp.Offset, "OFFSET"),
    (exp.Fetch, "FETCH"),
    (exp.Lateral, "LATERAL"),
    (exp.Unnest, "UNNEST"),
    (exp.Subquery, "subqueries"),
    (exp.Exists, "EXISTS (subquery)"),
    (exp.Lock, "FOR UPDATE/SHARE"),
    (exp.Into, "SELECT INTO"),
    (exp.Placeholder, "parameter placeholders"),
    (exp.Parameter, "parameter placeholders"),
)

# Functions whose value depends on when they run: a continuous query's answer must not.
TIME_DEPENDENT: dict[type[exp.Expr], str] = {
    exp.CurrentTimestamp: "now() / CURRENT_TIMESTAMP",
    exp.CurrentDate: "CURRENT_DATE",
    exp.CurrentTime: "CURRENT_TIME",
    exp.Rand: "random()",
}

SET_OPERATIONS = {exp.Union: "UNION", exp.Except: "EXCEPT", exp.Intersect: "INTERSECT"}


def parse(sql_text: str) -> exp.Select:
    """Parse exactly one SELECT statement."""
    if not isinstance(sql_text, str) or not sql_text.strip():
        raise QuerySyntaxError("the query is empty")
    try:
        statements = [s for s in sqlglot.parse(sql_text, read=DIALECT) if s is not None]
    except ParseError as exc:
        raise QuerySyntaxError(f"syntax error: {_first_error(exc)}") from None
    except SqlglotError as exc:
        raise QuerySyntaxError(f"cannot read the query: {exc}") from None
    if len(statements) != 1:
        raise QuerySyntaxError(
            f"expected exactly one SELECT statement, found {len(statements)} statements")
    tree = statements[0]
    for kind, name in SET_OPERATIONS.items():
        if isinstance(tree, kind):
            raise UnsupportedQueryError(name)
    if not isinstance(tree, exp.Select):
        raise QueryError(f"only SELECT queries can be registered, not {tree.key.upper()}")
    return tree


def _first_error(exc: ParseError) -> str:
    if exc.errors:
        err = exc.errors[0]
        where = f" at line {err.get('line')}, column {err.get('col')}" if err.get("line") else ""
        return f"{err.get('description')}{where}"
    return str(exc)


def refuse_unsupported(tree: exp.Select) -> None:
    for node in tree.walk():
        if node is not tree and isinstance(node, exp.Select):
            raise UnsupportedQueryError("subqueries")
        if type(node) in TIME_DEPENDENT:
            raise UnsupportedQueryError(
                f"the function {TIME_DEPENDENT[type(node)]}",
                "a continuous query must give the same answer whenever it is evaluated")
        for kind, construct in UNSUPPORTED:
            if isinstance(node, kind):
                raise UnsupportedQueryError(construct)


def _from_table(tree: exp.Select) -> exp.Table:
    source = tree.args.get("from_")
    if source is None:
        raise QueryError("the query reads no stream: it needs a FROM clause naming one")
    table = source.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise UnsupportedQueryError(f"FROM {table.sql(DIALECT)}", "FROM must name a stream")
    if table.args.get("db") or table.args.get("catalog"):
        raise QueryError(f"stream names are not schema-qualified: use FROM {table.name}")
    return table


def _resolve_stream(table: exp.Table, streams: Mapping[str, StreamSchema]) -> StreamSchema:
    ident = table.this
    name = ident.this if ident.quoted else fold(ident.this)
    if name not in streams:
        known = ", ".join(sorted(streams)) or "none yet"
        raise UnknownStreamError(f"unknown stream {name!r} (streams: {known})")
    return streams[name]


def analyze(sql_text: str, streams: Mapping[str, StreamSchema]) -> Analyzed:
    tree = parse(sql_text)
    refuse_unsupported(tree)
    stream = _resolve_stream(_from_table(tree), streams)
    user_aliases = {e.alias for e in tree.expressions if isinstance(e, exp.Alias)}

    try:
        tree = qualify(tree, schema={stream.name: dict(stream.columns)}, dialect=DIALECT,
                       expand_alias_refs=False)
    except OptimizeError as exc:
        raise UnknownColumnError(
            f"{_column_message(exc)} (stream {stream.name} has columns: "
            f"{', '.join(stream.column_names)})") from None

    alias = std_alias(1)
    for column in tree.find_all(exp.Column):
        column.set("table", exp.to_identifier(alias, quoted=True))
    _from_table(tree).set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))

    outputs = tuple(_strip_added_alias(e, user_aliases) for e in tree.expressions)
    tree.set("expressions", list(outputs))
    where = tree.args.get("where")
    predicate = where.this.sql(DIALECT) if where is not None else None

    used = {c.name for o in outputs for c in o.find_all(exp.Column)}
    # a node needs at least one column (PostgreSQL has no zero-column INSERT)
    columns = tuple(c for c in stream.column_names if c in used) or stream.column_names[:1]
    source: Plan = Scan(stream.name)
    if predicate is not None:
        source = Select(source, predicate, columns)
    plan = Output(source, tuple(o.sql(DIALECT) for o in outputs))
    return Analyzed(canonical=tree.sql(DIALECT), streams=(stream.name,), plan=plan,
                    functions=function_names(tree))


def _column_message(exc: OptimizeError) -> str:
    text = str(exc).split(". Line:")[0]
    match = re.match(r"Column '(.+)' could not be resolved(?: for table: '(.+)')?", text)
    if not match:
        return text
    column, table = match.groups()
    return f"unknown column {column!r}" + (f" for table {table!r}" if table else "")


def _strip_added_alias(projection: exp.Expr, user_aliases: set[str]) -> exp.Expr:
    """Drop the aliases qualify() invents, so PostgreSQL names the columns as it would."""
    if isinstance(projection, exp.Alias) and projection.alias not in user_aliases:
        return projection.this
    if (isinstance(projection, exp.Alias) and isinstance(projection.this, exp.Column)
            and projection.this.name == projection.alias):
        return projection.this
    return projection


def function_names(tree: exp.Expr) -> frozenset[str]:
    """Names of the functions a query calls, as PostgreSQL will look them up."""
    names = set()
    for func in tree.find_all(exp.Func):
        if isinstance(func, exp.Cast):
            continue
        if isinstance(func, exp.Anonymous):
            names.add(fold(func.name))
            continue
        text = func.sql(DIALECT)
        head = text.split("(", 1)[0].strip()
        if "(" in text and head.replace("_", "").isalnum():
            names.add(head.lower())
    return frozenset(names)
