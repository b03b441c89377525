"""The shared network as the catalog records it: load it, add nodes, drop unused ones.

A plan is mapped to nodes bottom-up; a node whose canonical signature already exists is
reused, so equal subplans of different queries share one node and its tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import psycopg
from psycopg import sql

from .compile import COMPILERS, Node, flush_block, node_block, program
from .errors import UnknownStreamError
from .names import NETWORK_SCHEMA, node_delta
from .plan import Plan, Scan, Select

SEQUENCE_GAP = 1000  # ARGUS's k: room to insert nodes between parent and child later

_LOAD = """
SELECT n.node_id, n.kind, n.join_level, n.sequence_id, n.hist_schema, n.hist_name,
       n.definition, n.insert_only,
       coalesce((SELECT array_agg(e.parent_id ORDER BY e.position)
                   FROM argus_catalog.edges e WHERE e.child_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.name ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.expr ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}')
  FROM argus_catalog.nodes n
"""


def _node(row: tuple) -> Node:
    (node_id, kind, level, seq, hist_schema, hist_name, definition, insert_only, parents,
     columns, exprs) = row
    return Node(id=node_id, kind=kind, join_level=level, sequence_id=seq,
                parents=tuple(parents), columns=tuple(columns), exprs=tuple(exprs),
                hist=sql.Identifier(hist_schema, hist_name), definition=definition,
                insert_only=insert_only)


@dataclass(frozen=True)
class Network:
    nodes: dict[int, Node]  # in evaluation order (join_level, sequence_id, node_id)
    streams: dict[str, int]  # stream name -> source node id


def load(conn: psycopg.Connection) -> Network:
    rows = conn.execute(_LOAD + " ORDER BY n.join_level, n.sequence_id, n.node_id").fetchall()
    streams = dict(conn.execute("SELECT name, node_id FROM argus_catalog.streams").fetchall())
    return Network({row[0]: _node(row) for row in rows}, streams)


def load_node(conn: psycopg.Connection, node_id: int) -> Node:
    row = conn.execute(_LOAD + " WHERE n.node_id = %s", (node_id,)).fetchone()
    assert row is not None, f"node {node_id} is not in the catalog"
    return _node(row)


def execute_all(conn: psycopg.Connection, statements: list[sql.Composed]) -> None:
    for statement in statements:
        conn.execute(statement)


class Builder:
    """Maps plans to nodes inside the registration's transaction."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.used: list[Node] = []  # every node the plan needs, bottom-up
        self.created: list[Node] = []

    def node_for(self, plan: Plan) -> Node:
        if isinstance(plan, Scan):
            node = self._stream_node(plan.stream)
        elif isinstance(plan, Select):
            parent = self.node_for(plan.input)
            exprs = tuple(sql.Identifier("t1", c).as_string(self.conn) for c in plan.columns)
            node = self._ensure(kind="select", parents=[parent], columns=plan.columns,
                                exprs=exprs, definition={"predicate": plan.predicate})
        else:  # pragma: no cover - the analyzer produces nothing else yet
            raise TypeError(f"no node kind for {type(plan).__name__}")
        self.used.append(node)
        return node

    def _stream_node(self, stream: str) -> Node:
        row = self.conn.execute("SELECT node_id FROM argus_catalog.streams WHERE name = %s",
                                (stream,)).fetchone()
        if row is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        return load_node(self.conn, row[0])

    def _ensure(self, *, kind: str, parents: list[Node], columns: tuple[str, ...],
                exprs: tuple[str, ...], definition: dict) -> Node:
        signature = json.dumps([kind, [p.id for p in parents], list(zip(columns, exprs)),
                                definition], sort_keys=True)
        found = self.conn.execute(
            "SELECT node_id FROM argus_catalog.nodes WHERE md5(signature) = md5(%s)",
            (signature,)).fetchone()
        if found:
            return load_node(self.conn, found[0])

        (node_id,) = self.conn.execute(
            "SELECT nextval(pg_get_serial_sequence('argus_catalog.nodes', 'node_id'))").fetchone()
        level = max(p.join_level for p in parents) + (1 if len(parents) > 1 else 0)
        seq = max(p.sequence_id for p in parents) + SEQUENCE_GAP
        node = Node(id=node_id, kind=kind, join_level=level, sequence_id=seq,
                    parents=tuple(p.id for p in parents), columns=columns, exprs=exprs,
                    hist=sql.Identifier(NETWORK_SCHEMA, f"n{node_id}"), definition=definition)
        self.conn.execute(
            """INSERT INTO argus_catalog.nodes
                   (node_id, kind, join_level, sequence_id, signature, definition,
                    hist_schema, hist_name, insert_only)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            (node_id, kind, level, seq, signature, json.dumps(definition), NETWORK_SCHEMA,
             f"n{node_id}", node.insert_only))
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO argus_catalog.edges VALUES (%s, %s, %s)",
                            [(node_id, i, p.id) for i, p in enumerate(parents, 1)])
            cur.executemany("INSERT INTO argus_catalog.node_columns VALUES (%s, %s, %s, %s)",
                            [(node_id, i, c, e) for i, (c, e) in enumerate(zip(columns, exprs), 1)])
        compiler = COMPILERS[kind]
        execute_all(self.conn, compiler.create(node, parents))
        store_blocks(self.conn, node, parents)
        backfill = compiler.backfill(node, parents)
        if backfill is not None:
            rows = self.conn.execute(backfill).rowcount
            self.conn.execute("UPDATE argus_catalog.nodes SET hist_rows = %s WHERE node_id = %s",
                              (rows, node_id))
        self.created.append(node)
        return node


def store_blocks(conn: psycopg.Connection, node: Node, parents: list[Node]) -> None:
    """Compile the node's cycle code once, at creation; assemble() concatenates it."""
    block = node_block(node, parents)
    conn.execute("UPDATE argus_catalog.nodes SET cycle_block = %s, flush_block = %s "
                 "WHERE node_id = %s",
                 (block.as_string(conn) if block is not None else None,
                  flush_block(node).as_string(conn), node.id))


def assemble(conn: psycopg.Connection) -> None:
    """Regenerate argus_net.cycle_program from the nodes' stored blocks. Called in the
    transaction of every change to the network, so code and network never disagree."""
    rows = conn.execute(
        """SELECT n.node_id, n.cycle_block, n.flush_block, s.name
             FROM argus_catalog.nodes n LEFT JOIN argus_catalog.streams s USING (node_id)
            ORDER BY n.join_level, n.sequence_id, n.node_id""").fetchall()
    streams = [(name, load_node(conn, node_id)) for node_id, _, _, name in rows if name]
    body = program(streams, [r[0] for r in rows],
                   [sql.SQL(block) for _, block, _, _ in rows if block],
                   [sql.SQL(flush) for _, _, flush, _ in rows])
    conn.execute(sql.SQL("CREATE OR REPLACE FUNCTION {}(argus_run bigint) RETURNS void "
                         "LANGUAGE plpgsql AS {}").format(
        sql.Identifier(NETWORK_SCHEMA, "cycle_program"), sql.Literal(body.as_string(conn))))


def drop_unused(conn: psycopg.Connection) -> list[int]:
    """Drop every non-stream node that no query needs, children before parents."""
    rows = conn.execute(
        """SELECT n.node_id, n.hist_schema, n.hist_name FROM argus_catalog.nodes n
            WHERE n.kind <> 'stream'
              AND NOT EXISTS (SELECT 1 FROM argus_catalog.query_nodes q
                               WHERE q.node_id = n.node_id)
            ORDER BY n.join_level DESC, n.sequence_id DESC, n.node_id DESC""").fetchall()
    for node_id, schema, name in rows:
        conn.execute(sql.SQL("DROP TABLE {}, {}").format(sql.Identifier(schema, name),
                                                         node_delta(node_id)))
        conn.execute("DELETE FROM argus_catalog.nodes WHERE node_id = %s", (node_id,))
    return [r[0] for r in rows]
