"""The catalog's record of the network's nodes: a node's row, its edges and columns
(argus_catalog.nodes, edges, node_columns), and the rows it holds as its statistics
count them (node_stats; the catalog's trigger gives each node its row). Streams, the
builder, migrations, Citus placement and drops all record through these, so that every
node is recorded with the same columns (issue 55: they were written in four places).
Written elsewhere: a column's canonical atom (mqo.index.record_atoms, a layer below
this one), a node's compiled code (stored.store_blocks), the cycles' statistics (the
cycle program) and an upgrade's one-line code (catalog.migrate)."""

from __future__ import annotations

import json
from collections.abc import Iterable

import psycopg
from psycopg import sql

from ..nodes import Node


def insert_node(conn: psycopg.Connection, node: Node, signature: str,
                private_to: str | None = None, findable: bool = True) -> None:
    """A new node (its id drawn already), its edges to its parents, its columns."""
    conn.execute(
        """INSERT INTO argus_catalog.nodes
               (node_id, kind, join_level, sequence_id, signature, private_to, findable,
                definition, layout, hist_schema, hist_name, insert_only)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (node.id, node.kind, node.join_level, node.sequence_id, signature, private_to,
         findable, json.dumps(node.definition), json.dumps(node.layout), *node.hist_ref,
         node.insert_only))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO argus_catalog.edges VALUES (%s, %s, %s)",
                        [(node.id, i, p) for i, p in enumerate(node.parents, 1)])
    replace_columns(conn, node.id, zip(node.columns, node.exprs), fresh=True)


def insert_stream(conn: psycopg.Connection, name: str, schema: str, definition: dict,
                  insert_only: bool) -> int:
    """A stream's source node (its columns come from its stream's: stream_columns);
    its id."""
    (node_id,) = conn.execute(
        """INSERT INTO argus_catalog.nodes (kind, join_level, sequence_id, signature,
                                            definition, hist_schema, hist_name, insert_only)
           VALUES ('stream', 0, 0, %s, %s, %s, %s, %s) RETURNING node_id""",
        (json.dumps(["stream", name]), json.dumps(definition), schema, name,
         insert_only)).fetchone()
    return node_id


def stream_columns(conn: psycopg.Connection, node_id: int, stream_id: int) -> None:
    """A stream's source node's columns: the stream's, as PostgreSQL spells their types."""
    conn.execute(
        """INSERT INTO argus_catalog.node_columns (node_id, position, name, expr, type)
           SELECT %s, position, name, format('%%I', name), type
             FROM argus_catalog.stream_columns WHERE stream_id = %s""",
        (node_id, stream_id))


def replace_columns(conn: psycopg.Connection, node_id: int,
                    columns: Iterable[tuple[str, str]], fresh: bool = False) -> None:
    """The node's columns, (name, expression) in order, instead of those it had (none
    if `fresh`); their types are recorded once its table exists (record_types)."""
    if not fresh:
        conn.execute("DELETE FROM argus_catalog.node_columns WHERE node_id = %s", (node_id,))
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO argus_catalog.node_columns (node_id, position, name, expr) "
            "VALUES (%s, %s, %s, %s)",
            [(node_id, i, name, expr) for i, (name, expr) in enumerate(columns, 1)])


def add_columns(conn: psycopg.Connection, node: Node,
                added: list[tuple[str, str, str, str | None]]) -> None:
    """Columns appended to the node's: (name, expression, type, the canonical atom it
    computes, if any)."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO argus_catalog.node_columns "
            "(node_id, position, name, expr, type, atom) VALUES (%s, %s, %s, %s, %s, %s)",
            [(node.id, len(node.columns) + i, n, e, t, a)
             for i, (n, e, t, a) in enumerate(added, 1)])


def record_types(conn: psycopg.Connection, node_id: int, types: dict[str, str]) -> None:
    """The node's columns' types, by name, as PostgreSQL spells them in its table."""
    with conn.cursor() as cur:
        cur.executemany("UPDATE argus_catalog.node_columns SET type = %s "
                        "WHERE node_id = %s AND name = %s",
                        [(pg_type, node_id, name) for name, pg_type in types.items()])


def count_rows(conn: psycopg.Connection, node: Node) -> None:
    """The node's statistics hold the rows its history holds now."""
    conn.execute(sql.SQL("UPDATE argus_catalog.node_stats SET hist_rows = "
                         "(SELECT count(*) FROM {}) WHERE node_id = %s").format(node.hist),
                 (node.id,))


def delete_node(conn: psycopg.Connection, node_id: int) -> None:
    """The node's record, its edges, columns and statistics with it (ON DELETE CASCADE)."""
    conn.execute("DELETE FROM argus_catalog.nodes WHERE node_id = %s", (node_id,))


def note_indexes(conn: psycopg.Connection, node_id: int, indexes: list[list[str]]) -> None:
    """The indexes the node asked for, [schema, name] each (network.indexes):
    drop_unused keeps an index while a node names it."""
    conn.execute(
        "UPDATE argus_catalog.nodes SET layout = layout || %s WHERE node_id = %s",
        (json.dumps({"indexes": indexes}), node_id))


def rename_index(conn: psycopg.Connection, old: list[str], new: list[str]) -> None:
    """Every node naming index `old` ([schema, name]) names `new` instead."""
    conn.execute(
        """UPDATE argus_catalog.nodes SET layout = jsonb_set(layout,
                  '{indexes}', (SELECT jsonb_agg(CASE WHEN i = %(old)s::jsonb
                                                      THEN %(new)s::jsonb ELSE i END)
                                  FROM jsonb_array_elements(layout->'indexes') i))
            WHERE layout->'indexes' @> jsonb_build_array(%(old)s::jsonb)""",
        {"old": json.dumps(old), "new": json.dumps(new)})


def set_definition(conn: psycopg.Connection, node_id: int, definition: dict, layout: dict,
                   signature: str, findable: bool) -> None:
    """What the node computes, how it keeps its rows and the signature it is found by
    (if `findable`), changed in place."""
    conn.execute("UPDATE argus_catalog.nodes SET definition = %s, layout = %s, signature = %s, "
                 "findable = %s WHERE node_id = %s",
                 (json.dumps(definition), json.dumps(layout), signature, findable, node_id))


def set_layout(conn: psycopg.Connection, node_id: int, layout: dict,
               findable: bool | None = None) -> None:
    """How the node keeps its rows, changed in place (and, when given, whether it is
    found by its signature: a lazy join's, once it is whole)."""
    conn.execute("UPDATE argus_catalog.nodes SET layout = %s, "
                 "findable = coalesce(%s, findable) WHERE node_id = %s",
                 (json.dumps(layout), findable, node_id))


def set_signature(conn: psycopg.Connection, node_id: int, signature: str,
                  findable: bool) -> None:
    conn.execute("UPDATE argus_catalog.nodes SET signature = %s, findable = %s "
                 "WHERE node_id = %s", (signature, findable, node_id))


def hide(conn: psycopg.Connection, node_id: int) -> None:
    """Node `node_id` is found by its signature no more: an equal node stands in for it
    (made beside it, isolated since a failure or made earlier by the same registration)."""
    conn.execute("UPDATE argus_catalog.nodes SET findable = false WHERE node_id = %s",
                 (node_id,))


def set_sharded_by(conn: psycopg.Connection, node_id: int, key: str | None) -> None:
    """The column the node's history is distributed by on Citus (None: on the
    coordinator)."""
    conn.execute("UPDATE argus_catalog.nodes SET sharded_by = %s WHERE node_id = %s",
                 (key, node_id))


def set_estimate(conn: psycopg.Connection, node_id: int, estimate: dict) -> None:
    """The optimizer's prediction for a new node (its rows, rate and inflows), kept as
    first made: `argus explain` sets what the cycles measure against it."""
    conn.execute("UPDATE argus_catalog.nodes SET estimate = %s "
                 "WHERE node_id = %s AND estimate IS NULL", (json.dumps(estimate), node_id))


def count_estimated(conn: psycopg.Connection, node_id: int, rows: float) -> None:
    """A prediction's unfilled node counted by its estimate (network.reads.estimated),
    rolled back with it."""
    conn.execute("UPDATE argus_catalog.node_stats SET hist_rows = %s WHERE node_id = %s",
                 (round(rows), node_id))


def count_built(conn: psycopg.Connection, node: Node, backfill_ms: float,
                rows: int | None = None) -> None:
    """A new node's rows and, for a signed node, what its backfill cost per row read
    and written: the first estimate of what rebuilding it costs (003). `rows`: the
    rows of a view that counting would run a whole join for (a virtual join's backfill
    limit, a selection over one its parent's rows)."""
    counted = (sql.SQL("SELECT count(*) AS rows FROM {}").format(node.hist) if rows is None
               else sql.SQL("SELECT {}::bigint AS rows").format(sql.Literal(rows)))
    conn.execute(sql.SQL(
        """UPDATE argus_catalog.node_stats n SET hist_rows = c.rows,
                  rebuild_ms_row = CASE WHEN %s THEN NULL ELSE
                      %s / (c.rows + coalesce((SELECT sum(p.hist_rows)
                             FROM argus_catalog.edges e
                             JOIN argus_catalog.node_stats p ON p.node_id = e.parent_id
                            WHERE e.child_id = n.node_id), 0) + 10) END
             FROM ({}) AS c
            WHERE n.node_id = %s""").format(counted),
        (node.insert_only, backfill_ms, node.id))


def reparent(conn: psycopg.Connection, node_id: int, parent: Node, gap: int) -> None:
    """Make `parent` the node's only parent, after it in evaluation order (ARGUS's
    sort IDs, `gap` apart: the node and its same-level descendants move up only if
    needed), and a node of every query that uses the node."""
    conn.execute("UPDATE argus_catalog.edges SET parent_id = %s WHERE child_id = %s",
                 (parent.id, node_id))
    conn.execute("INSERT INTO argus_catalog.query_nodes SELECT query_id, %s "
                 "FROM argus_catalog.query_nodes WHERE node_id = %s "
                 "ON CONFLICT DO NOTHING", (parent.id, node_id))
    todo = [(node_id, parent.join_level, parent.sequence_id)]
    while todo:
        moved, level, after = todo.pop()
        row = conn.execute(
            "UPDATE argus_catalog.nodes SET sequence_id = %s WHERE node_id = %s "
            "AND join_level = %s AND sequence_id <= %s RETURNING sequence_id",
            (after + gap, moved, level, after)).fetchone()
        if row is None:
            continue
        todo += [(child, level, row[0]) for (child,) in conn.execute(
            "SELECT child_id FROM argus_catalog.edges WHERE parent_id = %s", (moved,))]
