"""The network's code as the catalog stores it: each node's blocks compiled once, the
program's frame and the purges recomputed on every change and validated by running the
new code once; recompiling after an upgrade; dropping the nodes no query needs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from .. import abi, roles
from ..mqo import index
from ..names import LOCK_CYCLES, NETWORK_SCHEMA, node_delta
from ..nodes import CODE_VERSION, LOADED, SELECTS, Node
from ..nodes import expiry, lazy, stream
from ..nodes.base import var
from ..nodes.purge import purge_block
from ..program import (Statements, flush_block, frame, node_block, probe_block, written,
                       rebuildable)
from . import records
from .placement import held, placed
from .reads import idle_streams, load, load_node


def execute_all(conn: psycopg.Connection, statements) -> None:
    for statement in statements:
        conn.execute(statement)


def store_blocks(conn: psycopg.Connection, node: Node, parents: list[Node],
                 code: bool = True) -> None:
    """Compile the node's cycle code once, at creation, for both programs
    (argus.program.Statements); argus.assemble_program() (in the database) concatenates
    it. Without `code` (a prediction, rolled back: no cycle runs it), only what building
    reads of it."""
    lean = Statements(node.id)
    tables = [p.hist.as_string(conn) for p in parents]
    on_workers = held(conn, [*tables, node.hist.as_string(conn)]) if code else set()
    parents = [dataclasses.replace(p, on_workers=True) if table in on_workers else p
               for p, table in zip(parents, tables)]
    node = dataclasses.replace(node, on_workers=node.hist.as_string(conn) in on_workers)
    blocks = [b.as_string(conn) if b is not None else None for b in (
        node_block(node, parents, conn), flush_block(node, parents, conn),
        probe_block(node, list(map(lazy.readable, parents)), conn),
        node_block(node, parents, conn, lean), flush_block(node, parents, conn, lean))
    ] if code else [None] * 5
    conn.execute("UPDATE argus_catalog.nodes SET cycle_block = %s, flush_block = %s, "
                 "probe_block = %s, lean_block = %s, lean_flush_block = %s, lean_sql = %s, "
                 "rebuildable = %s, expires_by = %s WHERE node_id = %s",
                 (*blocks, Jsonb(list(lean.texts)) if lean.texts else None,
                  rebuildable(node), expiry.expires_by(node, parents), node.id))


def assemble(conn: psycopg.Connection, check: Iterable[int] = ()) -> None:
    """The network changed: store the program's frame and every node's purge code, make
    PostgreSQL validate the code this change compiled (`check`), and leave the program
    to the next cycle to assemble (argus.assemble_program, catalog/functions.sql). Called in the
    transaction of every change, so that code and network never disagree."""
    streams = [(name, load_node(conn, node_id), time_column) for name, node_id, time_column
               in conn.execute("SELECT name, node_id, time_column FROM argus_catalog.streams "
                               "ORDER BY name").fetchall()]
    # a query whose output is a stream itself, a selection that is a view of a stream's
    # rows and a deferred join's changes read them from the stream's delta table
    copied = {r[0] for r in conn.execute(
        """SELECT output_node FROM argus_catalog.queries
           UNION SELECT e.parent_id FROM argus_catalog.edges e
                   JOIN argus_catalog.nodes n ON n.node_id = e.child_id
                  WHERE n.kind = ANY(%s) AND (n.layout->>'virtual')::boolean
                     OR (n.layout->>'deferred')::boolean""", (SELECTS,))}
    program_frame = frame(streams, frozenset(name for name, node, _ in streams
                                             if node.id not in copied),
                          frozenset(idle_streams(conn)))
    purges = _store_purges(conn)
    if check:
        run_once(conn, list(check), purges)
    conn.execute("UPDATE argus_catalog.program_state SET program_frame = %s, program_stale = true",
                 (program_frame,))


def run_once(conn: psycopg.Connection, ids: list[int], purges: list[str]) -> None:
    """Run the cycle code of the nodes a change compiled once, over empty deltas, every
    step forced, in a savepoint rolled back: PostgreSQL plans and executes each of their
    statements (validating a function checks only their syntax), so that what
    registers is what a cycle can run. The purges are only validated."""
    rows = conn.execute(
        """SELECT n.node_id, n.cycle_block, n.flush_block,
                  n.rebuildable,
                  coalesce((SELECT array_agg(e.parent_id) FROM argus_catalog.edges e
                             WHERE e.child_id = n.node_id), '{}')
             FROM argus_catalog.nodes n WHERE n.node_id = ANY(%s)
            ORDER BY n.join_level, n.sequence_id, n.node_id""", (ids,)).fetchall()
    involved = sorted({i for r in rows for i in [r[0], *r[4]]})
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace "
        "WHERE s.nspname = %s AND c.relkind = 'r' AND c.relname = ANY(%s)",
        (NETWORK_SCHEMA, [f"n{i}_delta" for i in involved]))]
    # the parents it does not run have run, with no changes: a node may read their counts
    # (a selection passing every row of its Top-K: select/count_parent)
    ran = "".join("    " + "; ".join(f"{a} := {a} || {x}" for a, x in zip(abi.RAN, (
                      f"{i}::bigint", "0::bigint", "0::bigint", "0::float8"))) + ";\n"
                  for i in involved if i not in ids)
    forced = (f"    {abi.CLOCK_MOVED} := true;\n    {abi.PURGE} := false;\n"
              f"    {abi.ISOLATE} := false;\n") + ran + "\n".join(
        f"{block}\n    {var(node_id).as_string(None)} := 1;"
        for node_id, block, _, _, _ in rows if block)
    (body,) = conn.execute("SELECT argus.fill_program(%s, %s)", (frame([]), Jsonb({
        "declarations": written(involved, initial=1), "evaluate": forced,
        "signed": str(any(r[3] for r in rows)).lower(),
        "flush": "\n".join(f for _, _, f, _, _ in rows if f), "purge": "\n".join(purges),
        "clear": "", "outputs": "'{}'", "clock_outputs": "'{}'"}))).fetchone()
    # an anonymous block, not a function: PostgreSQL frees its compiled code and cached
    # plans after it ran (a dropped function's stayed in the session, and every later
    # DDL statement walked them: drops slowed with every registration)
    body = body.replace("DECLARE", f"DECLARE\n    {abi.RUN} bigint := 0;\n    failed_node bigint;"
                        "\n    failed_state text;\n    failed_error text;\n    culprit text;"
                        "\n    nodes_run bigint;\n    outputs jsonb;\n    clock_outputs jsonb;"
                        f"\n    {abi.SETTINGS} argus_catalog.settings := (SELECT s FROM "
                        "argus_catalog.settings s);", 1)
    # a join's term that probes a history comes twice (nodes/join: _terms), each taken by
    # the histories' sizes: run a second time as if every history were large
    histories = f"{abi.HISTORY_ROWS} real[] := argus.history_rows();"  # (program/cycle_program)
    assert histories in body
    bodies = [body] + ([body.replace(histories, f"{abi.HISTORY_ROWS} real[] := array_fill("
                                     f"'Infinity'::real, ARRAY[{max(involved)}]);", 1)]
                       if f"{abi.HISTORY_ROWS}[" in body else [])
    for body in bodies:
        with conn.transaction():
            conn.execute("SET LOCAL jit = off")
            for table in tables:
                conn.execute(sql.SQL("DELETE FROM {}").format(
                    sql.Identifier(NETWORK_SCHEMA, table)))
            conn.execute(sql.SQL("DO {}").format(sql.Literal(body)))
            raise psycopg.Rollback()


def _store_purges(conn: psycopg.Connection) -> list[str]:
    """Recompute every node's purge code (purge_block: it depends on the node's
    consumers, which any change may alter); return it. Only nodes whose every consumer
    is a time-bounded selection can purge, and no query's output node (its views read its
    whole history): the rest are ruled out here without loading them."""
    candidates = [r[0] for r in conn.execute(
        """SELECT e.parent_id FROM argus_catalog.edges e
             JOIN argus_catalog.nodes c ON c.node_id = e.child_id
            WHERE e.parent_id NOT IN (SELECT output_node FROM argus_catalog.queries)
            GROUP BY e.parent_id
           HAVING bool_and(c.kind = ANY(%s) AND c.definition->>'monotone' = 'true'
                           AND jsonb_typeof(c.definition->'bounds') = 'array'
                           AND jsonb_array_length(c.definition->'bounds') > 0)
            ORDER BY e.parent_id""", (SELECTS,))]
    purges: dict[int, str] = {}
    time_columns = dict(conn.execute("SELECT node_id, time_column FROM argus_catalog.streams"))
    on_workers = set(placed(conn))
    for node_id in candidates:
        children = [load_node(conn, r[0]) for r in conn.execute(
            "SELECT DISTINCT child_id FROM argus_catalog.edges WHERE parent_id = %s",
            (node_id,))]
        node = load_node(conn, node_id)
        block = purge_block(node, children, time_columns.get(node_id) if node.loaded
                            else None, bool(node.sharded_by) or node.loaded
                            and node.hist_ref[1] in on_workers)
        if block is not None:
            purges[node_id] = block.as_string(conn)
    conn.execute("UPDATE argus_catalog.nodes SET purge_block = NULL "
                 "WHERE purge_block IS NOT NULL AND node_id <> ALL(%s)", (list(purges),))
    with conn.cursor() as cur:
        cur.executemany("UPDATE argus_catalog.nodes SET purge_block = %s WHERE node_id = %s",
                        [(text, node_id) for node_id, text in purges.items()])
    return list(purges.values())


def recompile_stale(conn: psycopg.Connection) -> bool:
    """Recompile every node's stored code, and the program, when an older argus compiled
    them (program_state.code_version < CODE_VERSION). True if it did."""
    def current() -> bool:
        return conn.execute("SELECT code_version >= %s FROM argus_catalog.program_state",
                            (CODE_VERSION,)).fetchone()[0]

    if current():
        return False
    with conn.transaction():
        conn.execute(LOCK_CYCLES)
        roles.become_owner(conn)
        if current():
            return False  # another process did it while this one waited
        net = load(conn)
        for node in net.nodes.values():
            execute_all(conn, stream.upgraded(node))
            store_blocks(conn, node, [net.nodes[p] for p in node.parents])
        assemble(conn)
        conn.execute("UPDATE argus_catalog.program_state SET code_version = %s", (CODE_VERSION,))
    return True


def drop_unused(conn: psycopg.Connection) -> list[int]:
    """Drop every non-stream node that no query needs, children before parents, and the
    join-key indexes of argus's no remaining node asked for."""
    rows = conn.execute(
        """SELECT n.node_id, n.hist_schema, n.hist_name, n.layout->'indexes',
                  n.layout ? 'virtual', n.kind = ANY(%s), n.layout ? 'deferred',
                  n.layout ? 'lazy'
             FROM argus_catalog.nodes n
            WHERE n.kind <> ALL(%s)
              AND NOT EXISTS (SELECT 1 FROM argus_catalog.query_nodes q
                               WHERE q.node_id = n.node_id)
            ORDER BY n.join_level DESC, n.sequence_id DESC, n.node_id DESC""",
        (SELECTS, LOADED)).fetchall()
    indexes = []
    for node_id, schema, name, node_indexes, is_view, is_select, deferred, is_lazy in rows:
        if is_lazy:  # (its consumer's, or its consumer's full view, went first)
            conn.execute(sql.SQL("DROP VIEW {}").format(
                sql.Identifier(NETWORK_SCHEMA, f"n{node_id}_full")))
        aux = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
            (NETWORK_SCHEMA, f"n{node_id}\\_%"))]
        tables = [sql.Identifier(schema, name), node_delta(node_id)]
        if is_view:  # a virtual selection's delta is a view too, a virtual join's a table
            views, tables = (tables, []) if is_select else (tables[:1], tables[1:])
            if deferred:  # (its changes view reads its delta: first)
                views.insert(0, sql.Identifier(NETWORK_SCHEMA, f"n{node_id}_changes"))
            conn.execute(sql.SQL("DROP VIEW {}").format(sql.SQL(", ").join(views)))
        tables += [sql.Identifier(NETWORK_SCHEMA, t) for t in aux if t != f"n{node_id}_delta"]
        if tables:
            conn.execute(sql.SQL("DROP TABLE {}").format(sql.SQL(", ").join(tables)))
        records.delete_node(conn, node_id)
        indexes += node_indexes or []
    for schema, name in indexes:
        if not name.startswith("argus_"):  # (a tracked table's primary key, shared)
            continue
        still_used = conn.execute(
            "SELECT 1 FROM argus_catalog.nodes WHERE layout->'indexes' @> %s::jsonb",
            (json.dumps([[schema, name]]),)).fetchone()
        if not still_used:
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(schema, name)))
    if rows:
        index.drop_orphans(conn)
    return [r[0] for r in rows]
