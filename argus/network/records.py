"""The catalog's record of the network's nodes: a node's row, its edges and columns
(argus_catalog.nodes, edges, node_columns), and the rows it holds as its statistics
count them (node_stats; the catalog's trigger gives each node its row). Streams, the
builder, migrations and drops all record through these, so that every node is recorded
with the same columns (issue 55: they were written in four places). Written elsewhere
still: a column's canonical atom (mqo.index.record_atoms, a layer below this one), a
node's compiled code (stored.store_blocks) and its definition's later additions."""

from __future__ import annotations

import json
from collections.abc import Iterable

import psycopg
from psycopg import sql

from ..nodes import Node


def insert_node(conn: psycopg.Connection, node: Node, signature: str) -> None:
    """A new node (its id drawn already), its edges to its parents, its columns."""
    conn.execute(
        """INSERT INTO argus_catalog.nodes
               (node_id, kind, join_level, sequence_id, signature, definition,
                hist_schema, hist_name, insert_only)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (node.id, node.kind, node.join_level, node.sequence_id, signature,
         json.dumps(node.definition), *node.hist_ref, node.insert_only))
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
