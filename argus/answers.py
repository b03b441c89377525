"""The views a query's answer is read through (argus_results.<name>) and its last
changes (argus_changes.<name>), and the check a cycle runs of the query's own output
expressions."""

from __future__ import annotations

import psycopg
from psycopg import sql
from sqlglot import exp

from .errors import QueryError
from .frontend.lateral import expands
from .frontend.temporal import at_previous_clock, reads_clock
from .names import NETWORK_SCHEMA, changes_view, results_view
from .network.placement import installed
from .network.reads import evaluate_held
from .nodes import SIGN_ID, T1, Node
from .templates import render
from .failures import never_fails
from .trees import tree_of


def output_check_sql(output: list[str], top, bound: int | None = None) -> str | None:
    """The statement a cycle runs to evaluate the query's own output expressions over
    the rows its top node gained (query/check_output.sql); None when none can fail on a
    row of the node's types (failures.never_fails), or they read the clock (they change
    with it, whatever the rows). An output that expands rows (a set-returning function
    of the data) is counted to `bound` only."""
    types = top.typed()
    if all(never_fails(e, types=types) for e in output) \
            or any(reads_clock(e) for e in output):
        return None
    slots = {"exprs": sql.SQL(", ").join(map(sql.SQL, output)), "delta": top.kind_of.changes(top),
             "t1": T1, "sign": SIGN_ID}
    if bound is not None and any(expands(e) for e in output):
        return render("query/check_output_bounded", limit=sql.Literal(bound + 1),
                      bound=sql.Literal(bound), **slots).as_string(None)
    return render("query/check_output", **slots).as_string(None)


def check_held(conn: psycopg.Connection, name: str, output: list[str], top,
               bound: int | None) -> None:
    """The query's own output expressions over the rows its answer holds when it is
    registered, which no cycle's check evaluates (it reads the rows a cycle brings): one
    they fail on would fail every read of the answer, as it fails the query run from
    scratch. Refused, naming PostgreSQL's error; an expanding output is evaluated to one
    row past its bound only."""
    try:
        evaluate_held(conn, output, top.hist, bound=bound)
    except psycopg.DataError as exc:
        raise QueryError(f"query {name!r}: its output columns fail on a row it would "
                         f"answer now: {exc.diag.message_primary} (PostgreSQL fails the "
                         f"query run from scratch too)") from None


def results_view_sql(conn: psycopg.Connection, name: str, output: list[str], top: Node
                     ) -> sql.Composed:
    """The query's answer, read through argus.intact() (refused while a crash's losses
    are rebuilt: network.durability); on Citus without it (a view over distributed
    tables runs its functions on the workers, which have no argus; its tables stay
    logged)."""
    return render("query/results_view", view=results_view(name), hist=top.hist, t1=T1,
                  exprs=sql.SQL(", ").join(map(sql.SQL, output)),
                  guard=sql.SQL("") if installed(conn) else sql.SQL(" WHERE argus.intact()"))


def changes_view_sql(conn: psycopg.Connection, name: str, output: list[str], top,
                     last_run: int, kept: sql.Identifier | None = None) -> sql.Composed:
    """The query's changes view: its output expressions over the top node's delta, or,
    for expressions that read the clock, what changed as the clock moved too; empty
    until a cycle after `last_run` (the last before registration). `kept`: a table of
    the last cycle's changes, shown until the next cycle (a migration's, argus.adapt).
    Where a row can be retracted, the changes are made net (query/changes_net), rows
    told apart by a hash first: of the row where every output type hashes (`hashable`,
    asked of the results view, made first), else of its text."""
    trees = [tree_of(e) for e in output]
    clocked = any(reads_clock(e) for e in output)
    netted = kept is not None or clocked or not top.insert_only
    whole = netted and kept is None and not clocked and _whole_rows(trees, top)
    body = changes_rows(output, top, last_run, kept, whole)
    if netted:
        names = [t.alias_or_name for t in trees]
        qualified = sql.SQL(", ").join(sql.Identifier("argus_c", n) for n in names)
        hashed = sql.SQL("argus_c.argus_hk") if whole else (
            sql.SQL("hash_record_extended(ROW({}), 0)") if hashable(conn, name)
            else sql.SQL("hashtextextended(ROW({})::text, 0)")).format(qualified)
        body = render("query/changes_net", changes=body, sign=SIGN_ID, qualified=qualified,
                      columns=sql.SQL(", ").join(map(sql.Identifier, names)), hash=hashed,
                      materialized=sql.SQL("NOT MATERIALIZED" if whole else "MATERIALIZED"))
    return render("query/changes_view", view=changes_view(name), changes=body)


def changes_rows(output: list[str], top, last_run: int, kept: sql.Identifier | None = None,
                 whole: bool = False) -> sql.Composed:
    """The rows the changes view shows, before they are made net: what a migration
    keeps of them (argus.adapt.move), the view making them net at each read. `whole`:
    with the top node's row hash (argus_hk: _whole_rows)."""
    exprs = sql.SQL(", ").join(map(sql.SQL, output))
    slots = {"exprs": sql.SQL("{}, coalesce({}.argus_hash, 0) AS argus_hk").format(exprs, T1)
             if whole else exprs,
             "delta": top.kind_of.changes(top), "t1": T1,
             "sign": SIGN_ID, "after": sql.Literal(last_run)}
    if not any(reads_clock(e) for e in output):
        body = render("query/changes", **slots)
    else:
        body = render("query/changes_clock", hist=top.hist, previous=sql.SQL(", ").join(
            sql.SQL(at_previous_clock(e)) for e in output), **slots)
    if kept is not None:
        body = render("query/changes_kept", changes=body, kept=kept,
                      after=sql.Literal(last_run))
    return body


def _whole_rows(output: list[exp.Expression], top: Node) -> bool:
    """Whether the output is the top node's columns as they are, in their order, and
    the node's delta holds its whole row's hash (Kind.row_hashed): equal output rows are
    then equal rows of the node, of one hash, which the changes are told apart by
    instead of hashing each row again (a Top-K's thousands of rank shifts)."""
    return top.kind_of.row_hashed(top) and [
        (t.this if isinstance(t, exp.Alias) else t) for t in output] == [
        exp.column(c, table="t1", quoted=True) for c in top.columns]


def hashable(conn: psycopg.Connection, name: str) -> bool:
    """Whether every column of the query's answer has a type PostgreSQL hashes
    (hash_record_extended): a base type, or an enum, with a default hash operator class,
    through domains and arrays; a composite or range type is taken as not."""
    return conn.execute(
        """WITH RECURSIVE t(oid) AS (
               SELECT a.atttypid FROM pg_attribute a
                WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped
               UNION
               SELECT CASE WHEN y.typtype = 'd' THEN y.typbasetype ELSE y.typelem END
                 FROM t JOIN pg_type y ON y.oid = t.oid
                WHERE y.typtype = 'd' OR y.typcategory = 'A')
           SELECT bool_and(y.typtype = 'd' OR y.typcategory = 'A'
                           OR y.typtype IN ('b', 'e') AND EXISTS (
                               SELECT FROM pg_opclass o JOIN pg_am m ON m.oid = o.opcmethod
                                WHERE m.amname = 'hash' AND o.opcdefault
                                  AND o.opcintype IN (y.oid, CASE WHEN y.typtype = 'e'
                                                              THEN 'anyenum'::regtype END)))
             FROM t JOIN pg_type y ON y.oid = t.oid""",
        (results_view(name).as_string(conn),)).fetchone()[0] is True


def output_of(conn: psycopg.Connection, query_id: int) -> list[str]:
    """The query's output expressions over its top node, in order."""
    return [e for (e,) in conn.execute("SELECT expr FROM argus_catalog.query_columns "
                                       "WHERE query_id = %s ORDER BY position", (query_id,))]


def kept_tables(conn: psycopg.Connection, query_id: int) -> list[sql.Identifier]:
    """The tables of last changes a query's migrations kept (argus.adapt)."""
    return [sql.Identifier(NETWORK_SCHEMA, table) for (table,) in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
        (NETWORK_SCHEMA, f"q{query_id}\\_kept\\_%")).fetchall()]


def drop_kept(conn: psycopg.Connection, query_id: int,
              but: sql.Identifier | None = None) -> None:
    """Drop the tables of last changes a query's migrations kept (argus.adapt)."""
    for table in kept_tables(conn, query_id):
        if table != but:
            conn.execute(sql.SQL("DROP TABLE {}").format(table))
