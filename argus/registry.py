"""Register and drop queries: SQL → plan → nodes → views, in one transaction.

Registration holds the cycle lock, so it never interleaves with a cycle: a new node is
backfilled from its parents' histories and receives every later delta, and its answer
covers all data like the SQL itself.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import psycopg
from psycopg import sql

from .frontend import functions
from . import admission, answers, network, roles
from .settings import pinned_session
from .frontend.analyze import Analyzed, analyze, analyze_rerun, rerunnable
from .frontend.calls import as_registered
from .nodes import Node, delta_view, virtual
from .program import rebuild
from .errors import (DuplicateNameError, QueryError, QueryFailedError, UnknownQueryError,
                     UnsupportedQueryError)
from .names import (LOCK_CYCLES, RESERVED_PREFIX, change_log, changes_view, check_name,
                    results_view, std_alias, stream_inbox)
from .network import Builder, assemble, drop_unused, execute_all, jisc
from .mqo.sharing import Sharing
from .streams import stream_schemas
from .frontend.temporal import calls_user_clock, clock_once, reads_clock
from .trees import tree_of

log = logging.getLogger(__name__)  # (argus's command line prints its messages)


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
    status: str = "ok"  # 'failed': isolated after a node of it failed (see `retry`)
    error: str | None = None  # the node's error, and the row it failed on if known

    def check_ok(self) -> None:
        if self.status != "ok":
            raise QueryFailedError(
                f"query {self.name!r} failed and is isolated, its answer as it was before: "
                f"{self.error}. PostgreSQL could not run it over these rows either, unless "
                f"what failed is another query's part of a node they share (their aggregates "
                f"kept in one node: argus explain shows its users; register this one again "
                f"with --sharing none). Register it again, changed (argus drop, argus "
                f"register), or fix the function it calls and then: argus retry {self.name}")


def register(conn: psycopg.Connection, name: str, sql_text: str,
             sharing: Sharing | None = None, force: bool = False,
             registrant: str | None = None, evaluate: str = "incremental") -> QueryInfo:
    """`registrant`: the role a registrar's request came from (argus.requests), which
    must be allowed to read every stream the query reads and to call its functions.
    `evaluate`: 'incremental', or 'rerun' (one node re-runs the query in each cycle that
    brings its streams rows, argus.nodes.rerun)."""
    name = check_name(name, "query")
    if evaluate not in EVALUATIONS:
        raise QueryError(f"evaluate must be one of {', '.join(EVALUATIONS)}, not {evaluate!r}")
    # read and planned before taking the cycle lock: a large query holds up no cycle
    schemas = stream_schemas(conn)
    read = analyze_rerun if evaluate == "rerun" else analyze
    try:
        analyzed = read(sql_text, schemas,
                        lambda names: functions.check(conn, names, registrant))
    except UnsupportedQueryError as exc:
        if evaluate == "incremental" and rerunnable(exc):
            exc.args = (f"{exc.args[0]}; it can be evaluated by re-running it instead "
                        "(argus register --rerun, or evaluate='rerun')",)
        raise
    if registrant is not None:
        admission.check_readable(conn, analyzed.streams, registrant)
    network.rebuild_if_lost(conn)  # (a new node is filled from the nodes it reads)
    with conn.transaction(), pinned_session(conn):
        roles.become_owner(conn)  # (names resolve as a cycle's: pinned_session's path)
        # before the cycle lock: a query that takes long to plan holds up no cycle
        plan = admission.checked(conn, analyzed, registrant)
        conn.execute(LOCK_CYCLES)
        if conn.execute("SELECT 1 FROM argus_catalog.queries WHERE name = %s",
                        (name,)).fetchone():
            raise DuplicateNameError(f"query {name!r} already exists")
        _refuse_stopped(conn, f"query {name!r}", analyzed.streams)
        _claim_waiting(conn, name, analyzed.streams)
        if stream_schemas(conn) != schemas:  # a stream was created or dropped meanwhile
            # (its calls as first resolved: the search path is pinned now)
            analyzed = read(sql_text, stream_schemas(conn),
                            as_registered(analyzed.schemas, analyzed.canonical))
            plan = admission.checked(conn, analyzed, registrant)
        if not force:
            admission.check_state(conn, name, plan)
        return _built(conn, name, sql_text, analyzed, sharing or Sharing(), evaluate, force)


def preview(conn: psycopg.Connection, name: str, sql_text: str,
            sharing: Sharing | None = None, force: bool = False,
            evaluate: str = "incremental") -> tuple[QueryInfo, str]:
    """What registering the query would do, and nothing kept: registered, explained
    (argus.explain: the nodes it would make and those it would share, with their
    estimates), then rolled back. It costs what registering costs (the new nodes are
    filled from the histories) and waits for a running cycle as registering does."""
    from .explain import explain

    with conn.transaction(force_rollback=True):
        info = register(conn, name, sql_text, sharing, force, evaluate=evaluate)
        return info, explain(conn, name)


def _built(conn: psycopg.Connection, name: str, sql_text: str, analyzed, sharing: Sharing,
           evaluate: str, force: bool) -> QueryInfo:
    """The registered query's nodes made, within the limits of the query's state and
    the network's budget unless forced, and its code validated; what PostgreSQL refuses
    is a QueryError saying so."""
    bound = None if force else admission.row_bound(conn)
    (budget,) = conn.execute("SELECT state_budget FROM argus_catalog.settings").fetchone()
    before = None if budget is None or force else network.network_bytes(conn)
    try:
        info, compiled = _build(conn, name, sql_text, analyzed, sharing, evaluate, bound)
        if not force:
            admission.check_kept(conn, info)
        if before is not None:
            admission.check_budget(conn, name, budget, before)
        assemble(conn, check=compiled)
        return info
    except psycopg.Error as exc:
        raise QueryError(f"query {name!r} cannot be maintained: "
                         f"{exc.diag.message_primary or exc}{admission.why(exc)}") from None
    except RecursionError:
        raise QueryError(f"query {name!r} nests too deeply to be maintained; "
                         "split it") from None


def _claim_waiting(conn: psycopg.Connection, name: str, streams) -> None:
    """Rows wait in the inbox of a stream no query reads (settings.unread_inbox_bytes):
    a query that reads it first has a cycle claim them, in the registration's
    transaction, so that its answer covers every row loaded before it."""
    idle = sorted(network.idle_streams(conn) & set(streams))
    if not idle:
        return
    waiting = [stream for (stream,) in conn.execute(sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT {} WHERE EXISTS (SELECT FROM {})").format(sql.Literal(s),
                                                                   stream_inbox(s))
        for s in idle))]
    if not waiting:
        return
    log.info("argus: rows wait in the inbox of %s, which no query read until %r: a cycle "
             "claims them first, so that its answer covers them", ", ".join(waiting), name)
    conn.execute("SET LOCAL argus.claim_waiting = on")
    status, error = conn.execute("SELECT status, error FROM argus.cycle(true)").fetchone()
    conn.execute("SET LOCAL argus.claim_waiting = off")
    if status == "failed":
        raise QueryError(f"query {name!r} cannot be registered: the rows waiting in "
                         f"{', '.join(waiting)} must be claimed first, and that cycle "
                         f"failed: {error}")


def _build(conn: psycopg.Connection, name: str, sql_text: str, analyzed: Analyzed,
           sharing: Sharing, evaluate: str, bound: int | None = None
           ) -> tuple[QueryInfo, set[int]]:
    builder = Builder(conn, sharing, query=name)
    builder.row_bound = bound
    top, output = build_top(builder, name, analyzed, evaluate)
    try:
        with conn.transaction():
            conn.execute(answers.results_view_sql(conn, name, output, top))
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
    check = answers.output_check_sql(output, top, builder.row_bound)
    if check is not None:
        answers.check_held(conn, name, output, top, builder.row_bound)
    (last_run,) = conn.execute("SELECT coalesce(max(run_id), 0) FROM argus_catalog.runs"
                               ).fetchone()
    conn.execute(answers.changes_view_sql(conn, name, output, top, last_run))
    (query_id,) = conn.execute(
        """INSERT INTO argus_catalog.queries (name, sql, canonical, output_node, join_orders,
                                              clock_output, sharing, join_sharing, evaluate,
                                              output_check, functions, changes_after)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING query_id""",
        (name, sql_text, analyzed.canonical, top.id,
         json.dumps(builder.join_orders) if builder.join_orders else None,
         any(reads_clock(e) for e in output), sharing.strategy,
         sharing.join_sharing, evaluate, check,
         json.dumps(dict(analyzed.schemas)), last_run)).fetchone()
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


EVALUATIONS = ("incremental", "rerun")


def build_top(builder: Builder, name: str, analyzed: Analyzed, evaluate: str
              ) -> tuple[Node, list[str]]:
    """The query's top node and its output expressions over it (as `t1`, reading the
    clock once: on Citus, on the coordinator), its plan mapped onto nodes, or one node
    that re-runs it (argus.nodes.rerun)."""
    if evaluate == "rerun":
        if calls_user_clock(tree_of(analyzed.canonical)):
            raise QueryError(f"query {name!r} reads the stream clock (argus_now()): it is "
                             "maintained incrementally, not by re-running it")
        top = builder.make_rerun(analyzed.canonical, analyzed.streams, len(analyzed.names))
        return top, [sql.SQL("{} AS {}").format(sql.Identifier(std_alias(1), c),
                                                sql.Identifier(n)).as_string(None)
                     for c, n in zip(top.columns, analyzed.names)]
    top = builder.defer(builder.node_for(analyzed.plan.input))
    builder.check_horizon(top, None)  # the views read the top node's whole history
    output = [clock_once(builder.renamed(e, t1=analyzed.plan.input))
              for e in analyzed.plan.exprs]
    clocked = any(reads_clock(e) for e in output)
    builder.shard_created(frozenset({top.id}) if clocked else frozenset())  # (on Citus,
    # once every backfill ran; an answer that reads the clock stays on the coordinator)
    return builder.on_coordinator(top) if clocked else top, output


def unregister(conn: psycopg.Connection, name: str) -> list[int]:
    """Drop the query, its views and every node no other query needs; return those."""
    name = check_name(name, "query")
    with conn.transaction():
        conn.execute(LOCK_CYCLES)
        row = conn.execute("DELETE FROM argus_catalog.queries WHERE name = %s "
                           "RETURNING query_id", (name,)).fetchone()
        if row is None:
            raise UnknownQueryError(f"unknown query {name!r}")
        conn.execute("DELETE FROM argus_catalog.grants WHERE query = %s", (name,))
        # (decisions are by name: a new query of the name must not inherit one's wait)
        conn.execute("DELETE FROM argus_catalog.migrations WHERE query = %s", (name,))
        conn.execute(sql.SQL("DROP VIEW {}, {}").format(results_view(name), changes_view(name)))
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(change_log(name)))
        answers.drop_kept(conn, row[0])
        dropped = drop_unused(conn)
        assemble(conn, check=())  # no new code
        return dropped


def query_info(conn: psycopg.Connection, name: str) -> QueryInfo:
    name = check_name(name, "query")
    row = conn.execute("SELECT query_id, sql, output_node, status, "
                       "concat_ws('; row: ', error, culprit) FROM argus_catalog.queries "
                       "WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise UnknownQueryError(f"unknown query {name!r}")
    query_id, sql_text, output, status, error = row
    columns = conn.execute("SELECT name, type FROM argus_catalog.query_columns "
                           "WHERE query_id = %s ORDER BY position", (query_id,)).fetchall()
    nodes = conn.execute(
        """SELECT n.node_id, n.kind FROM argus_catalog.query_nodes qn
             JOIN argus_catalog.nodes n USING (node_id) WHERE qn.query_id = %s
            ORDER BY n.join_level, n.sequence_id, n.node_id""", (query_id,)).fetchall()
    return QueryInfo(name, sql_text, [tuple(c) for c in columns], output,
                     [NodeInfo(i, k, False) for i, k in nodes], status, error or None)


def check_ok(conn: psycopg.Connection, name: str) -> None:
    """Raise for an unknown or isolated query (asked of argus.query_status, which
    answers whoever may read the query)."""
    name = check_name(name, "query")
    row = conn.execute("SELECT status, error FROM argus.query_status(%s)", (name,)).fetchone()
    if row is None:
        raise unknown_query(conn, name)
    QueryInfo(name, "", [], 0, [], row[0], row[1] or None).check_ok()


def unknown_query(conn: psycopg.Connection, name: str) -> UnknownQueryError:
    return UnknownQueryError(f"unknown query {name!r} (or not one role {conn.info.user!r} "
                             f"may read)")


def readable_info(conn: psycopg.Connection, name: str, sql_text: str) -> QueryInfo:
    """What a role that may read a query sees of it: its output columns (the network's
    nodes are the owner's)."""
    columns = conn.execute(
        """SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
            WHERE attrelid = %s::regclass AND attnum > 0 ORDER BY attnum""",
        (results_view(check_name(name, "query")).as_string(conn),)).fetchall()
    return QueryInfo(name, sql_text, [tuple(c) for c in columns], 0, [])


def _refuse_stopped(conn: psycopg.Connection, what: str, streams) -> None:
    """A query over a tracked table that stopped following its source is neither
    registered nor retried: it would answer over the stale copy (a helper)."""
    stopped = conn.execute(
        "SELECT s.name, t.stopped FROM argus_catalog.tracked t JOIN argus_catalog.streams s "
        "USING (stream_id) WHERE t.stopped IS NOT NULL AND s.name = ANY(%s) LIMIT 1",
        (list(streams),)).fetchone()
    if stopped:
        raise QueryError(f"{what} reads table {stopped[0]}, which stopped following its "
                         f"source ({stopped[1]}): untrack it (argus untrack {stopped[0]}), "
                         "then track its source again")


def _changes_start_again(conn: psycopg.Connection, name: str, top_id: int) -> None:
    """A retried query's changes from the next cycle on: the deltas its changes view
    reads hold a cycle's it missed (a retraction of a row that failed it, say), and what
    its answer gained or lost meanwhile is known of no log. Its changes view shows none
    until the next cycle (as a new query's), and its log holds the changes after now: a
    subscriber behind it starts again from its answer (ChangesLostError; a helper found
    the rebuilt rows never logged, and the changes view failing on the missed row)."""
    (query_id,) = conn.execute("SELECT query_id FROM argus_catalog.queries WHERE name = %s",
                               (name,)).fetchone()
    (now,) = conn.execute("SELECT argus.position()").fetchone()
    conn.execute(answers.changes_view_sql(conn, name, answers.output_of(conn, query_id),
                                          network.load_node(conn, top_id), now))
    answers.drop_kept(conn, query_id)
    conn.execute("UPDATE argus_catalog.queries SET changes_after = %s WHERE query_id = %s",
                 (now, query_id))
    conn.execute("UPDATE argus_catalog.change_logs SET since = greatest(since, %s) "
                 "WHERE query_id = %s", (now, query_id))


def retry(conn: psycopg.Connection, name: str) -> QueryInfo:
    """Put a failed query back into the cycles: rebuild the nodes only failed queries
    used (they missed the cycles since) from their parents' histories, in evaluation
    order, and mark it ok. If it still fails, nothing changes and the error says why."""
    name = check_name(name, "query")
    network.rebuild_if_lost(conn)
    with conn.transaction(), pinned_session(conn):
        conn.execute(LOCK_CYCLES)
        info = query_info(conn, name)
        if info.status == "ok":
            return info
        _refuse_stopped(conn, f"query {name!r}", [r[0] for r in conn.execute(
            "SELECT n.definition ->> 'stream' FROM argus_catalog.nodes n "
            "WHERE n.node_id = ANY(%s) AND n.kind = ANY(argus.kinds('loaded'))",
            ([n.id for n in info.nodes],))])
        # its lazily built joins (a JISC migration's) are rebuilt whole, as finished
        jisc.finish(conn, [n.id for n in info.nodes])
        stale = {r[0] for r in conn.execute("SELECT node_id FROM argus.excluded_nodes()")}
        net = network.load(conn)
        try:
            with conn.transaction():
                mine = {n.id for n in info.nodes} & stale
                for node in net.nodes.values():  # evaluation order
                    if node.id not in mine or delta_view(node):
                        continue
                    conn.execute(sql.SQL("DELETE FROM {}").format(node.delta_table))
                    if not virtual(node):  # (a virtual join's history is its parents')
                        parents = [net.nodes[p] for p in node.parents]
                        execute_all(conn, rebuild(node, parents))
                        network.records.count_rows(conn, node)
                # its own output expressions, over its whole answer (run_cycle checks
                # each cycle's new rows)
                conn.execute(sql.SQL("SELECT count(argus_row.*) FROM {} AS argus_row").format(
                    results_view(name)))  # (a whole row: not a column named r)
        except psycopg.Error as exc:
            raise QueryError(f"query {name!r} still fails, and stays isolated: "
                             f"{exc.diag.message_primary or exc}") from None
        _changes_start_again(conn, name, info.output_node)
        conn.execute("UPDATE argus_catalog.queries SET status = 'ok', error = NULL, "
                     "culprit = NULL, failed_run = NULL, failed_node = NULL, "
                     "failed_at = NULL WHERE name = %s", (name,))
        conn.execute("UPDATE argus_catalog.program_state SET program_stale = true")
        return query_info(conn, name)
