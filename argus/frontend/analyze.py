"""From SQL text to a validated, canonical query: parse with sqlglot, refuse what the
engine does not maintain, resolve every column against the stream schemas (sqlglot's
qualify), and hand the tree to the planner.

Everything here is pure: no database access. What only PostgreSQL can check (types,
function volatility) is checked at registration by `argus.registry`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from ..errors import (QueryError, QuerySyntaxError, UnknownColumnError, UnknownStreamError,
                      UnsupportedQueryError)
from ..names import fold
from ..plan import Output
from .constants import STRINGS, TIME_TYPES, refuse_moving
from .ctes import scope_ctes, unique_aliases
from .parens import flatten_nested_joins, refuse_nests, unwrap_parens
from .windows import inline_windows
from .filters import filters_as_case
from .outer import inner_when_rejected, outer_joins
from .scalar import unnest_subqueries
from .topk import push_top_k
from .lateral import lateral_functions
from .lateral_joins import lateral_subqueries, scalar_top_1
from .limit import limit_as_top_k
from .grouping import CALLED_AGGREGATES
from .planner import Planner
from .calls import function_names, qualify_functions, renamed_calls
from .relations import figure_name
from ..trees import DIALECT, folded



@dataclass(frozen=True)
class StreamSchema:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, PostgreSQL type), in declared order
    time_column: str | None = None
    not_null: frozenset[str] = frozenset()
    primary_key: tuple[str, ...] | None = None  # a table's (argus.tables); None: a stream
    source: str | None = None  # the ordinary table a table follows (argus.track)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


@dataclass(frozen=True)
class Analyzed:
    canonical: str  # the query as argus understood it, over the streams by name
    streams: tuple[str, ...]
    plan: Output | None  # None: not planned, to be re-run (`analyze_rerun`)
    functions: frozenset[str]  # names of the functions it calls, for the volatility check
    names: tuple[str, ...] = ()  # its output columns' names, as PostgreSQL names them
    # the schema of each function it calls outside pg_catalog, as its calls were
    # resolved (kept with the query: planning it again resolves them the same way)
    schemas: Mapping[str, str] = field(default_factory=dict)


# Constructs refused at registration, wherever they appear: they have no meaning (or no
# incremental maintenance yet) for a continuous answer. The planner refuses the shapes
# it cannot translate (FULL joins, scalar subqueries, …) itself.
UNSUPPORTED: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.Order, "ORDER BY"),
    (exp.Limit, "LIMIT"),
    (exp.Offset, "OFFSET"),
    (exp.Fetch, "FETCH"),
    (exp.Lateral, "LATERAL"),
    (exp.Unnest, "UNNEST"),
    (exp.Lock, "FOR UPDATE/SHARE"),
    (exp.Into, "SELECT INTO"),
    (exp.Placeholder, "parameter placeholders"),
    (exp.Parameter, "parameter placeholders"),
)

# Functions whose value depends on when or by whom they run: a continuous query's
# answer must not.
TIME_DEPENDENT: dict[type[exp.Expr], str] = {
    exp.CurrentTimestamp: "now() / CURRENT_TIMESTAMP",
    exp.CurrentDate: "CURRENT_DATE",
    exp.CurrentTime: "CURRENT_TIME",
    exp.Rand: "random()",
    **{getattr(exp, name): text for name, text in (
        ("CurrentUser", "CURRENT_USER"), ("SessionUser", "SESSION_USER"),
        ("CurrentRole", "CURRENT_ROLE"), ("CurrentSchema", "CURRENT_SCHEMA"),
        ("CurrentCatalog", "CURRENT_CATALOG"), ("CurrentVersion", "version()"),
        ("Localtimestamp", "LOCALTIMESTAMP"), ("Localtime", "LOCALTIME"))
       if hasattr(exp, name)},
}

# ... of them, the wall clock: a window is written against the stream clock instead
CLOCKS = tuple(t for t, text in TIME_DEPENDENT.items()
               if text.startswith(("now()", "CURRENT_DATE", "CURRENT_TIME", "LOCAL")))

QUERY_TYPES = (exp.Select, exp.Union, exp.Except, exp.Intersect)

# sqlglot nests `a OR b OR c …` one level per term, and argus walks trees recursively:
# deeper queries are refused with a clear error rather than a RecursionError.
MAX_DEPTH = 250


def parse(sql_text: str) -> exp.Select:
    """Parse exactly one SELECT statement."""
    if not isinstance(sql_text, str) or not sql_text.strip():
        raise QuerySyntaxError("the query is empty")
    try:
        statements = [s for s in sqlglot.parse(sql_text, read=DIALECT) if s is not None]
    except RecursionError:
        raise QuerySyntaxError("the query nests too deeply to be read (hundreds of levels of "
                               "parentheses or AND/OR terms); split it") from None
    except ParseError as exc:
        raise QuerySyntaxError(f"syntax error: {_first_error(exc)}") from None
    except SqlglotError as exc:
        raise QuerySyntaxError(f"cannot read the query: {exc}") from None
    if len(statements) != 1:
        raise QuerySyntaxError(
            f"expected exactly one SELECT statement, found {len(statements)} statements")
    tree = flatten_nested_joins(unwrap_parens(statements[0]))
    if not isinstance(tree, QUERY_TYPES):
        raise QueryError(f"only SELECT queries can be registered, not {tree.key.upper()}")
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        raise QuerySyntaxError(
            f"the query nests more than {MAX_DEPTH} levels deep: a chain of "
            "hundreds of AND/OR terms, or of parentheses; write a list of values as "
            "x IN (…), or split the query")
    for node in tree.walk():  # (a comment would follow its expression into the SQL
        node.comments = None  # compared: `GROUP BY k -- why` matched no output column)
    _collations(tree)
    return tree


def _collations(tree: exp.Expr) -> None:
    """A collation named by its schema (`COLLATE pg_catalog."C"`), which sqlglot reads
    as a column of a table (refused as an unknown column; a helper), made a name; one
    written as a string, which PostgreSQL refuses, refused saying so (it read as a
    syntax error at NULL: the probe's literals are NULLs, frontend.reach)."""
    for collate in tree.find_all(exp.Collate):
        name = collate.expression
        if isinstance(name, exp.Column) and name.args.get("table") is not None:
            collate.set("expression", exp.Dot(this=name.args["table"].copy(),
                                              expression=name.this.copy()))
        elif isinstance(name, exp.Literal):
            raise QuerySyntaxError(f"COLLATE takes a collation's name, not a string: "
                                   f'write COLLATE "{name.this}", not COLLATE \'{name.this}\'')


def _depth(tree: exp.Expr) -> int:
    """How deep the tree nests, without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:
            stack.extend((child, depth + 1) for child in node.iter_expressions())
    return deepest


def _first_error(exc: ParseError) -> str:
    """sqlglot's first error, where it is and the text there: `…tran_id >>>FROM<<<
    transfers`."""
    if exc.errors:
        err = exc.errors[0]
        where = f" at line {err.get('line')}, column {err.get('col')}" if err.get("line") else ""
        text = ""
        if err.get("highlight"):
            before, after = err.get("start_context") or "", err.get("end_context") or ""
            text = f": {before[-30:]}>>>{err['highlight']}<<<{after[:30]}"
        return f"{err.get('description')}{where}{text}"
    return str(exc)


def refuse_unsupported(tree: exp.Expr, constructs=UNSUPPORTED) -> None:
    for node in tree.walk():
        if type(node) in TIME_DEPENDENT:
            clock = type(node) in CLOCKS
            raise UnsupportedQueryError(
                f"the function {TIME_DEPENDENT[type(node)]}",
                "a continuous query must give the same answer whenever it is evaluated"
                + ("; for windows use argus_now(), the stream clock (the latest event "
                   "time the cycles have seen)" if clock else ""))
        if isinstance(node, exp.Cast) and _temporal(node.to):
            refuse_moving(node)
        for kind, construct in constructs:
            if isinstance(node, kind) and not (isinstance(node, exp.Order)
                                               and _ordering_call(node.parent)) and not (
                    isinstance(node, exp.Unnest) and _in_select_list(node)):
                raise UnsupportedQueryError(construct)


# ranges and multiranges of dates or times: their bounds are read as times too
# ('[yesterday,tomorrow)'::daterange; a helper)
_TIME_RANGES = tuple(getattr(exp.DataType.Type, name) for name in (
    "DATERANGE", "DATEMULTIRANGE", "TSRANGE", "TSMULTIRANGE", "TSTZRANGE", "TSTZMULTIRANGE"))


def _temporal(kind: exp.DataType) -> bool:
    """A date/time type, a range of one, or an array of either."""
    while kind.is_type(exp.DataType.Type.ARRAY) and kind.expressions:
        kind = kind.expressions[0]
    return kind.is_type(*exp.DataType.TEMPORAL_TYPES, *_TIME_RANGES)


def _refuse_moving_comparisons(tree: exp.Expr, streams: Mapping[str, StreamSchema]) -> None:
    """An untyped 'now' or 'today' compared with a column of a date/time type (by its
    name: PostgreSQL types the constant later, argus.frontend.constants)."""
    timed = {c for s in streams.values() for c, t in s.columns if t in TIME_TYPES}
    reads_time: dict[int, bool] = {}  # per comparison: an IN list of 10,000 is read once
    for literal in tree.find_all(exp.Literal, *STRINGS):
        comparison = literal.parent
        if not isinstance(comparison, (exp.Binary, exp.Between, exp.In)):
            continue
        if id(comparison) not in reads_time:
            reads_time[id(comparison)] = any(c.name in timed
                                             for c in comparison.find_all(exp.Column))
        if reads_time[id(comparison)]:
            refuse_moving(literal)


def _in_select_list(node: exp.Expr) -> bool:
    """A set-returning call of a select list (frontend.lateral), not a FROM item."""
    if isinstance(node.parent, exp.Alias):
        node = node.parent
    return isinstance(node.parent, exp.Select) and node.arg_key == "expressions"


def _ordering_call(node: exp.Expr | None) -> bool:
    """An ORDER BY there orders a window's or an aggregate's rows, not the answer's."""
    return isinstance(node, (exp.Window, exp.WithinGroup, exp.AggFunc)) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in CALLED_AGGREGATES)


def _check_tables(tree: exp.Expr, streams: Mapping[str, StreamSchema]) -> None:
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if isinstance(table.parent, exp.Into):
            continue  # SELECT INTO, refused as such
        if table.args.get("db") or table.args.get("catalog"):
            raise QueryError(f"stream names are not schema-qualified: use FROM {table.name}")
        ident = table.this
        if isinstance(ident, exp.Func):
            continue  # a set-returning function, which must follow a stream (frontend.lateral)
        if not isinstance(ident, exp.Identifier):
            raise UnsupportedQueryError(f"FROM {table.sql(DIALECT)}", "FROM must name a stream")
        name = ident.this if ident.quoted else fold(ident.this)
        if name not in streams and name not in ctes:
            known = ", ".join(sorted(streams)) or "none yet"
            raise UnknownStreamError(f"unknown stream {name!r} (streams: {known})")


def _read(sql_text: str, streams: Mapping[str, StreamSchema],
          functions: Callable[[frozenset[str]], Mapping[str, str]] | None,
          refused) -> tuple[exp.Expr, set[str], dict[str, str]]:
    """The query parsed, checked (`refused` constructs, streams, columns, functions)
    and qualified by sqlglot; and the output names the user gave: AS aliases, the
    column alias lists of derived tables and CTEs (`AS t (a, b)`), which qualify()
    turns into AS aliases, and USING columns (`COALESCE(a.k, b.k) AS k`)."""
    if "\x00" in sql_text:  # PostgreSQL's text cannot hold it: no name or literal may
        raise QuerySyntaxError("the query's text contains a NUL character (\\x00), which "
                               "PostgreSQL text cannot hold; remove it")
    tree = inline_windows(scope_ctes(parse(sql_text), streams))
    _check_tables(tree, streams)
    if refused is UNSUPPORTED:  # (a query to be re-run keeps its LIMIT, LATERAL as is)
        refuse_nests(tree)
        tree = lateral_subqueries(scalar_top_1(tree),
                                  lambda item: _columns_of(item, tree, streams))
        tree = limit_as_top_k(tree)
        tree = lateral_functions(tree, lambda item: _columns_of(item, tree, streams))
    refuse_unsupported(tree, refused)
    if functions is None:
        schemas = {}
    else:
        names = function_names(tree)
        schemas = dict(functions(names | renamed_calls(sql_text, tree, names)))
    qualify_functions(tree, schemas)
    if not tree.find(exp.From):
        raise QueryError("the query reads no stream: it needs a FROM clause naming one")
    user_aliases = {folded(a.args["alias"]) for a in tree.find_all(exp.Alias)} | {
        folded(c) for t in tree.find_all(exp.TableAlias) for c in t.columns} | {
        folded(c) for j in tree.find_all(exp.Join) for c in j.args.get("using") or []}
    for join in tree.find_all(exp.Join):  # (its columns are named once qualify finds them)
        if join.method == "NATURAL":
            join.meta["natural"] = True
    schema = {s.name: dict(s.columns) for s in streams.values()}
    try:
        # PostgreSQL resolves WHERE and HAVING against the FROM clause only, and GROUP BY
        # against output names too: check the first without GROUP BY, then qualify all.
        if _may_reference_output_names(tree):
            _qualified(_without_grouping(tree), schema, expand_alias_refs=False)
        tree = unique_aliases(_qualified(tree, schema))
    except OptimizeError as exc:
        known = "; ".join(f"{s.name}: {', '.join(s.column_names)}" for s in streams.values())
        raise UnknownColumnError(f"{_column_message(exc)} (stream columns: {known})") from None
    _refuse_moving_comparisons(tree, streams)
    user_aliases |= {c.name for j in tree.find_all(exp.Join)  # (NATURAL: USING them all)
                     if j.meta.get("natural") and j.args.get("on")
                     for c in j.args["on"].find_all(exp.Column)}
    return tree, user_aliases, schemas


def _qualified(tree: exp.Expr, schema: dict, **options) -> exp.Expr:
    """sqlglot's qualify, table aliases made canonical (_0, _1, …). A star qualified by
    an alias (`A.*`, `AB.*`) is expanded first, with the aliases as written: sqlglot
    renames the alias before it expands the star, and then cannot find it."""
    if any(isinstance(c.this, exp.Star) and c.table for c in tree.find_all(exp.Column)):
        tree = qualify(tree, schema=schema, dialect=DIALECT, **options)
    return qualify(tree, schema=schema, dialect=DIALECT, canonicalize_table_aliases=True,
                   **options)


def _columns_of(item: exp.Expr, tree: exp.Expr, streams: Mapping[str, StreamSchema]
                ) -> list[str]:
    """A qualified FROM item's column names: a stream's, a CTE's or a subquery's."""
    if isinstance(item, exp.Subquery):
        return list(item.this.named_selects)
    ctes = {cte.alias: cte.this for cte in tree.find_all(exp.CTE)}
    if item.name in ctes:
        return list(ctes[item.name].named_selects)
    return list(streams[item.name].column_names) if item.name in streams else []


def _used(tree: exp.Expr, streams: Mapping[str, StreamSchema]) -> tuple[str, ...]:
    return tuple(sorted({t.name for t in tree.find_all(exp.Table) if t.name in streams}))


def analyze(sql_text: str, streams: Mapping[str, StreamSchema],
            functions: Callable[[frozenset[str]], Mapping[str, str]] | None = None) -> Analyzed:
    """`functions`: checks the names of the functions the query calls and says the
    schema of those outside pg_catalog, whose calls are then schema-qualified
    (argus.frontend.functions.check)."""
    tree, user_aliases, schemas = _read(sql_text, streams, functions, UNSUPPORTED)
    tree = filters_as_case(tree)
    tree, kept = outer_joins(tree, lambda item: _columns_of(item, tree, streams))
    user_aliases |= kept
    tree, derived = unnest_subqueries(tree)
    user_aliases |= derived
    tree = inner_when_rejected(tree)
    refs = Counter((c.table, c.name) for c in tree.find_all(exp.Column))
    planner = Planner(streams, refs, user_aliases=user_aliases)
    result = planner.query(tree)
    _check_clock_uses(result.plan)
    exprs = tuple(f"{expr} AS {exp.to_identifier(name, quoted=True).sql(DIALECT)}"
                  for name, expr in result.outputs)
    return Analyzed(canonical=tree.sql(DIALECT), streams=_used(tree, streams),
                    plan=push_top_k(Output(result.plan, exprs)),
                    functions=function_names(tree),
                    names=tuple(name for name, _ in result.outputs), schemas=schemas)


# What a query to be re-run may not hold either: no meaning for a stored answer.
NEVER: tuple[tuple[type[exp.Expr], str], ...] = tuple(
    (kind, construct) for kind, construct in UNSUPPORTED
    if kind in (exp.Lock, exp.Into, exp.Placeholder, exp.Parameter))


def rerunnable(refused: UnsupportedQueryError) -> bool:
    """Whether a construct `analyze` refused is one a query to be re-run may hold
    (judged by the construct alone: reading the query again to be sure could cost as
    much as a hostile query's whole analysis)."""
    return not (refused.construct in {construct for _, construct in NEVER}
                or refused.construct.startswith(("the function ", "argus_now()")))


def analyze_rerun(sql_text: str, streams: Mapping[str, StreamSchema],
                  functions: Callable[[frozenset[str]], Mapping[str, str]] | None = None
                  ) -> Analyzed:
    """A query to be evaluated by re-running it (argus.nodes.rerun): read and checked as
    `analyze` reads it, but not planned into nodes, so that SQL argus does not maintain
    incrementally (window functions, ORDER BY … LIMIT, scalar subqueries, …) can be
    kept current too. Its outputs are named as PostgreSQL names them."""
    tree, user_aliases, schemas = _read(sql_text, streams, functions, NEVER)
    outermost = tree
    while not isinstance(outermost, exp.Select):  # a set operation: its first SELECT names
        outermost = outermost.this
    names = tuple(e.alias if isinstance(e, exp.Alias) and e.alias in user_aliases
                  else figure_name(e.this if isinstance(e, exp.Alias) else e)
                  for e in outermost.expressions)
    return Analyzed(canonical=tree.sql(DIALECT), streams=_used(tree, streams), plan=None,
                    functions=function_names(tree), names=names, schemas=schemas)


def _check_clock_uses(plan) -> None:
    """argus_now() is allowed in temporal filters (a WHERE or HAVING condition on one
    relation) and in the query's output; anywhere else its value would be frozen into
    stored rows at the clock they were computed at."""
    from ..plan import Aggregate, Join, Select
    from .temporal import NOW

    stack = [plan]
    while stack:
        node = stack.pop()
        texts = []
        if isinstance(node, Select):
            texts = [c.expr for c in node.columns]
        elif isinstance(node, Join):
            texts = [node.condition] + [c.expr for c in node.columns]
        elif isinstance(node, Aggregate):
            texts = [g.expr for g in node.groups] + [a.arg or "" for a in node.aggregates]
        if any(NOW in t for t in texts):
            raise UnsupportedQueryError(
                "argus_now() here", "use it in a WHERE or HAVING condition on one relation "
                "(a temporal filter such as t > argus_now() - interval '1 hour') or in the "
                "query's output columns")
        stack += [getattr(node, a) for a in ("input", "left", "right") if hasattr(node, a)]


def _may_reference_output_names(tree: exp.Expr) -> bool:
    """Does some WHERE or HAVING mention, unqualified, a name its SELECT gives an
    output column? Only then can PostgreSQL's and sqlglot's name resolution differ."""
    for select in tree.find_all(exp.Select):
        names = {e.alias for e in select.expressions if isinstance(e, exp.Alias)}
        for clause in (select.args.get("where"), select.args.get("having")):
            if clause is not None and any(not c.table and c.name in names
                                          for c in clause.find_all(exp.Column)):
                return True
    return False


def _without_grouping(tree: exp.Expr) -> exp.Expr:
    """A copy whose HAVING conditions are moved into WHERE and GROUP BY dropped, so that
    qualify() without alias expansion checks their names as PostgreSQL does."""
    copy = tree.copy()
    for select in copy.find_all(exp.Select):
        having = select.args.get("having")
        select.set("group", None)
        if having is not None:
            select.set("having", None)
            select.where(having.this, copy=False)
    return copy


def _column_message(exc: OptimizeError) -> str:
    text = str(exc).split(". Line:")[0]
    match = re.match(r"Column '(.+)' could not be resolved(?: for table: '(.+)')?", text)
    if not match:
        return text
    column, table = match.groups()
    return f"unknown column {column!r}" + (f" for table {table!r}" if table else "")
