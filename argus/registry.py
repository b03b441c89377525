"""Register and drop queries: SQL → plan → nodes → views, in one transaction.

Registration holds the cycle lock, so it never interleaves with a cycle: a new node is
backfilled from its parents' histories and receives every later delta, and its answer
covers all data like the SQL itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from .analyze import Analyzed, analyze
from .compile import SIGN_ID, T1
from .errors import DuplicateNameError, QueryError, UnknownQueryError, UnsupportedQueryError
from .names import (CYCLE_LOCK, RESERVED_PREFIX, STREAMS_SCHEMA, changes_view, check_name,
                    results_view)
from .network import Builder, assemble, drop_unused
from .sharing import Sharing
from .streams import stream_schemas
from .templates import render

# Stable functions whose value changes with the clock: PostgreSQL calls them stable,
# a continuous query must not depend on them.
CLOCK_FUNCTIONS = frozenset({"now", "statement_timestamp", "transaction_timestamp",
                             "clock_timestamp", "timeofday", "localtimestamp", "localtime",
                             "current_timestamp", "current_date", "current_time"})


@dataclass(frozen=True)
class NodeInfo:
    id: int
    kind: str
    created: bool  # False: an existing node was shared


@dataclass(frozen=True)
class QueryInfo:
    name: str
    sql: str
    columns: list[tuple[str, str]]  # (name, type)
    output_node: int
    nodes: list[NodeInfo]


def register(conn: psycopg.Connection, name: str, sql_text: str,
             sharing: Sharing | None = None) -> QueryInfo:
    name = check_name(name, "query")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", CYCLE_LOCK)
        if conn.execute("SELECT 1 FROM argus_catalog.queries WHERE name = %s",
                        (name,)).fetchone():
            raise DuplicateNameError(f"query {name!r} already exists")
        analyzed = analyze(sql_text, stream_schemas(conn))
        _check_functions(conn, analyzed)
        _check_with_postgres(conn, analyzed)
        try:
            info, compiled = _build(conn, name, sql_text, analyzed, sharing or Sharing())
            assemble(conn, check=compiled)
            return info
        except psycopg.Error as exc:
            raise QueryError(f"query {name!r} cannot be maintained: "
                             f"{exc.diag.message_primary or exc}") from None


def _check_functions(conn: psycopg.Connection, analyzed: Analyzed) -> None:
    if not analyzed.functions:
        return
    rows = conn.execute(
        """SELECT DISTINCT proname FROM pg_proc
            WHERE proname = ANY(%s) AND (provolatile = 'v' OR proname = ANY(%s))
            ORDER BY 1""", (sorted(analyzed.functions), sorted(CLOCK_FUNCTIONS))).fetchall()
    if rows:
        raise UnsupportedQueryError(
            f"the volatile or clock-dependent function {rows[0][0]}()",
            "a continuous query must give the same answer whenever it is evaluated")


def _check_with_postgres(conn: psycopg.Connection, analyzed: Analyzed) -> None:
    """Let PostgreSQL plan the canonical query over the stream histories: types,
    operators and functions are checked before anything is created."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(analyzed.canonical, read="postgres")
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if table.name not in ctes:
            table.set("db", exp.to_identifier(STREAMS_SCHEMA, quoted=True))
    try:
        with conn.transaction():
            conn.execute(sql.SQL("EXPLAIN {}").format(
                sql.SQL(tree.sql(dialect="postgres", copy=False))))
    except psycopg.Error as exc:
        diag = exc.diag
        hint = f" (hint: {diag.message_hint})" if diag.message_hint else ""
        raise QueryError(f"PostgreSQL rejects the query: {diag.message_primary or exc}{hint}"
                         ) from None


def _build(conn: psycopg.Connection, name: str, sql_text: str, analyzed: Analyzed,
           sharing: Sharing) -> tuple[QueryInfo, set[int]]:
    builder = Builder(conn, sharing, query=name)
    top = builder.node_for(analyzed.plan.input)
    builder.check_horizon(top, None)  # the views read the top node's whole history
    output = [builder.renamed(e, t1=analyzed.plan.input) for e in analyzed.plan.exprs]
    exprs = sql.SQL(", ").join(map(sql.SQL, output))
    try:
        with conn.transaction():
            conn.execute(render("query/results_view", view=results_view(name), exprs=exprs,
                                hist=top.hist, t1=T1))
    except psycopg.errors.DuplicateColumn as exc:
        raise QueryError(f"query {name!r}: {exc.diag.message_primary}; give each output "
                         "column a distinct name with AS") from None
    columns = conn.execute(
        """SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
            WHERE attrelid = %s::regclass AND attnum > 0 ORDER BY attnum""",
        (results_view(name).as_string(conn),)).fetchall()
    reserved = [c for c, _ in columns if c.startswith(RESERVED_PREFIX)]
    if reserved:
        raise QueryError(f"query {name!r}: output column {reserved[0]!r} uses the reserved "
                         f"prefix '{RESERVED_PREFIX}'; rename it with AS")
    conn.execute(render("query/changes_view", view=changes_view(name), exprs=exprs,
                        delta=top.delta, t1=T1, sign=SIGN_ID))
    (query_id,) = conn.execute(
        """INSERT INTO argus_catalog.queries (name, sql, canonical, output_node)
           VALUES (%s, %s, %s, %s) RETURNING query_id""",
        (name, sql_text, analyzed.canonical, top.id)).fetchone()
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO argus_catalog.query_columns VALUES (%s, %s, %s, %s, %s)",
                        [(query_id, i, c, t, e) for i, ((c, t), e)
                         in enumerate(zip(columns, output), 1)])
        used = builder.ancestors(top.id)
        cur.executemany("INSERT INTO argus_catalog.query_nodes VALUES (%s, %s)",
                        [(query_id, n) for n, _ in used])
    created = {n.id for n in builder.created}
    return QueryInfo(name=name, sql=sql_text, columns=columns, output_node=top.id,
                     nodes=[NodeInfo(n, kind, n in created) for n, kind in used]
                     ), builder.compiled


def unregister(conn: psycopg.Connection, name: str) -> list[int]:
    """Drop the query, its views and every node no other query needs; return those."""
    name = check_name(name, "query")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", CYCLE_LOCK)
        if not conn.execute("DELETE FROM argus_catalog.queries WHERE name = %s RETURNING 1",
                            (name,)).fetchone():
            raise UnknownQueryError(f"unknown query {name!r}")
        conn.execute(sql.SQL("DROP VIEW {}, {}").format(results_view(name), changes_view(name)))
        dropped = drop_unused(conn)
        assemble(conn, check=())  # no new code
        return dropped


def query_info(conn: psycopg.Connection, name: str) -> QueryInfo:
    name = check_name(name, "query")
    row = conn.execute("SELECT query_id, sql, output_node FROM argus_catalog.queries "
                       "WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise UnknownQueryError(f"unknown query {name!r}")
    query_id, sql_text, output = row
    columns = conn.execute("SELECT name, type FROM argus_catalog.query_columns "
                           "WHERE query_id = %s ORDER BY position", (query_id,)).fetchall()
    nodes = conn.execute(
        """SELECT n.node_id, n.kind FROM argus_catalog.query_nodes qn
             JOIN argus_catalog.nodes n USING (node_id) WHERE qn.query_id = %s
            ORDER BY n.join_level, n.sequence_id, n.node_id""", (query_id,)).fetchall()
    return QueryInfo(name, sql_text, [tuple(c) for c in columns], output,
                     [NodeInfo(i, k, False) for i, k in nodes])
