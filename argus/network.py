"""The shared network as the catalog records it: load it, add nodes, drop unused ones.

A plan is mapped to nodes bottom-up; a node whose canonical signature already exists is
reused, so equal subplans of different queries share one node and its tables.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import psycopg
import sqlglot
from psycopg import sql
from sqlglot import exp

from .compile import COMPILERS, Node, flush_block, node_block, program, purge_block
from .errors import QueryError, UnknownStreamError
from .names import NETWORK_SCHEMA, node_delta
from .plan import Aggregate, Col, Distinct, Join, Plan, Scan, Select, SetOp
from .planner import short
from .temporal import classify, clock_conjuncts

SEQUENCE_GAP = 1000  # ARGUS's k: room to insert nodes between parent and child later

_LOAD = """
SELECT n.node_id, n.kind, n.join_level, n.sequence_id, n.hist_schema, n.hist_name,
       n.definition, n.insert_only,
       coalesce((SELECT array_agg(e.parent_id ORDER BY e.position)
                   FROM argus_catalog.edges e WHERE e.child_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.name ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.expr ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.type ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}')
  FROM argus_catalog.nodes n
"""

# Columns of a table and whether their type can be hashed (has a default hash opclass,
# directly, through its base or element type, or by binary coercion).
_COLUMN_TYPES = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod),
       EXISTS (SELECT 1 FROM pg_opclass oc JOIN pg_am am ON am.oid = oc.opcmethod
                WHERE am.amname = 'hash' AND oc.opcdefault
                  AND oc.opcintype IN (t.oid, t.typbasetype,
                      CASE WHEN t.typcategory = 'A' THEN 'anyarray'::regtype END,
                      CASE WHEN t.typtype = 'e' THEN 'anyenum'::regtype END,
                      CASE WHEN t.typtype = 'r' THEN 'anyrange'::regtype END))
       OR EXISTS (SELECT 1 FROM pg_opclass oc JOIN pg_am am ON am.oid = oc.opcmethod
                    JOIN pg_cast c ON c.castsource = t.oid AND c.casttarget = oc.opcintype
                                  AND c.castmethod = 'b'
                   WHERE am.amname = 'hash' AND oc.opcdefault)
  FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
 WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum
"""


def _node(row: tuple) -> Node:
    (node_id, kind, level, seq, hist_schema, hist_name, definition, insert_only, parents,
     columns, exprs, types) = row
    return Node(id=node_id, kind=kind, join_level=level, sequence_id=seq,
                parents=tuple(parents), columns=tuple(columns), exprs=tuple(exprs),
                hist_ref=(hist_schema, hist_name), definition=definition,
                insert_only=insert_only, types=tuple(types))


@dataclass(frozen=True)
class Network:
    nodes: dict[int, Node]  # in evaluation order (join_level, sequence_id, node_id)
    streams: dict[str, int]  # stream name -> source node id


_LOAD_ALL = """
WITH e AS (SELECT child_id, array_agg(parent_id ORDER BY position) AS parents
             FROM argus_catalog.edges GROUP BY child_id),
     c AS (SELECT node_id, array_agg(name ORDER BY position) AS names,
                  array_agg(expr ORDER BY position) AS exprs,
                  array_agg(type ORDER BY position) AS types
             FROM argus_catalog.node_columns GROUP BY node_id)
SELECT n.node_id, n.kind, n.join_level, n.sequence_id, n.hist_schema, n.hist_name,
       n.definition, n.insert_only, coalesce(e.parents, '{}'), coalesce(c.names, '{}'),
       coalesce(c.exprs, '{}'), coalesce(c.types, '{}')
  FROM argus_catalog.nodes n
  LEFT JOIN e ON e.child_id = n.node_id
  LEFT JOIN c ON c.node_id = n.node_id
 ORDER BY n.join_level, n.sequence_id, n.node_id
"""


def load(conn: psycopg.Connection) -> Network:
    rows = conn.execute(_LOAD_ALL).fetchall()
    streams = dict(conn.execute("SELECT name, node_id FROM argus_catalog.streams").fetchall())
    return Network({row[0]: _node(row) for row in rows}, streams)


def load_node(conn: psycopg.Connection, node_id: int) -> Node:
    row = conn.execute(_LOAD + " WHERE n.node_id = %s", (node_id,)).fetchone()
    assert row is not None, f"node {node_id} is not in the catalog"
    return _node(row)


def execute_all(conn: psycopg.Connection, statements) -> None:
    for statement in statements:
        conn.execute(statement)


def _category(pg_type: str) -> str:
    if pg_type in ("smallint", "integer", "bigint", "numeric"):
        return "exact"
    if pg_type in ("real", "double precision"):
        return "float"
    return "other"


class Builder:
    """Maps plans to nodes inside the registration's transaction."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.used: list[Node] = []  # every node the plan needs, bottom-up
        self.created: list[Node] = []
        self._memo: dict[Plan, Node] = {}

    def node_for(self, plan: Plan) -> Node:
        if plan in self._memo:
            return self._memo[plan]
        node = self._node_for(plan)
        self._memo[plan] = node
        self.used.append(node)
        return node

    def _node_for(self, plan: Plan) -> Node:
        if isinstance(plan, Scan):
            return self._stream_node(plan.stream)
        if isinstance(plan, Select):
            parent = self.node_for(plan.input)
            temporal, bounds, monotone = classify(plan.predicate)
            definition = {"predicate": plan.predicate}
            if temporal:
                definition.update(temporal=True, monotone=monotone,
                                  bounds=[[b.column, b.op, b.expr] for b in bounds],
                                  clock_conjuncts=clock_conjuncts(plan.predicate))
                self.check_horizon(parent, bounds if monotone else [])
            else:
                self.check_horizon(parent, None)
            node = self._ensure("select", [parent], plan.columns, definition,
                                parent.insert_only and not temporal)
            if temporal:
                self._index_parent(node, parent, [b.column for b in bounds])
            return node
        if isinstance(plan, Join):
            left, right = self.node_for(plan.left), self.node_for(plan.right)
            self.check_horizon(left, None)
            self.check_horizon(right, None)
            insert_only = plan.kind in ("inner", "semi") and left.insert_only and right.insert_only
            node = self._ensure("join", [left, right], plan.columns,
                                {"kind": plan.kind, "condition": plan.condition}, insert_only)
            self._index_join_keys(node, left, right)
            return node
        if isinstance(plan, Aggregate):
            parent = self.node_for(plan.input)
            self.check_horizon(parent, None)
            args = [a.arg for a in plan.aggregates if a.arg is not None]
            types = dict(zip(args, self._probe_types(parent, args)))
            aggregates = [[a.name, a.func, a.arg, a.distinct,
                           _category(types[a.arg]) if a.arg is not None else None]
                          for a in plan.aggregates]
            columns = list(plan.groups) + [
                Col(a.name, f"{a.func}({'DISTINCT ' if a.distinct else ''}{a.arg or '*'})")
                for a in plan.aggregates]
            return self._ensure("aggregate", [parent], tuple(columns),
                                {"groups": [[g.name, g.expr] for g in plan.groups],
                                 "aggregates": aggregates}, False)
        if isinstance(plan, Distinct):
            parent = self.node_for(plan.input)
            self.check_horizon(parent, None)
            columns = tuple(Col(c, sql.Identifier("t1", c).as_string(self.conn))
                            for c in parent.columns)
            return self._ensure("distinct", [parent], columns, {}, parent.insert_only)
        if isinstance(plan, SetOp):
            left, right = self.node_for(plan.left), self.node_for(plan.right)
            self.check_horizon(left, None)
            self.check_horizon(right, None)
            if len(left.columns) != len(right.columns):
                raise QueryError("each side of a set operation must have the same number "
                                 "of columns")
            # positional: column i of the left input matches column i of the right one
            columns = tuple(Col(n, f"t1.{i} | t2.{i}") for i, n in enumerate(left.columns, 1))
            insert_only = (plan.op in ("union_all", "intersect", "intersect_all")
                           and left.insert_only and right.insert_only)
            return self._ensure("setop", [left, right], columns, {"op": plan.op}, insert_only)
        raise TypeError(f"no node kind for {type(plan).__name__}")  # pragma: no cover

    def check_horizon(self, parent: Node, bounds) -> None:
        """A node whose old rows were purged can only feed a new consumer that would
        never read them: a selection whose lower time bounds lie at or after the
        horizon. `bounds` is None for any other consumer."""
        horizon = self.conn.execute("SELECT horizon FROM argus_catalog.nodes WHERE node_id = %s",
                                    (parent.id,)).fetchone()[0]
        if horizon is None:
            return
        stream = self.conn.execute("SELECT name FROM argus_catalog.streams WHERE node_id = %s",
                                   (parent.id,)).fetchone()
        what = f"stream {stream[0]!r}" if stream else f"node {parent.id}"
        if bounds:
            starts = "greatest(" + ", ".join(f"({b.expr})" for b in bounds) + ")"
            (ok, start) = self.conn.execute(sql.SQL(
                "SELECT ({})::timestamptz >= %s::timestamptz, ({})::text").format(
                    sql.SQL(starts), sql.SQL(starts)), (horizon,)).fetchone()
            if ok:
                return
            need = f"rows from {start} on"
        else:
            need = "all of its rows"
        raise QueryError(
            f"{what} keeps only its rows from {horizon} on: older rows were purged because "
            f"every query reading it is windowed; this query needs {need}. Give it a "
            f"window that starts at or after {horizon}.")

    def _index_parent(self, node: Node, parent: Node, columns: list[str]) -> None:
        """Index the parent on the time columns the node's bounds compare, so that
        purging the parent finds its old rows without a scan."""
        self._record_indexes(node, [(parent, c) for c in columns if c in parent.columns])

    def _stream_node(self, stream: str) -> Node:
        row = self.conn.execute("SELECT node_id FROM argus_catalog.streams WHERE name = %s",
                                (stream,)).fetchone()
        if row is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        return load_node(self.conn, row[0])

    def _probe_types(self, parent: Node, exprs: list[str]) -> list[str]:
        """PostgreSQL's types of expressions over a node's rows."""
        if not exprs:
            return []
        probe = sql.SQL("SELECT {} FROM (SELECT 1) AS d LEFT JOIN (SELECT {} FROM {} AS t1 "
                        "LIMIT 0) AS s ON TRUE").format(
            sql.SQL(", ").join(sql.SQL("pg_typeof(s.{})::text").format(sql.Identifier(f"e{i}"))
                               for i in range(len(exprs))),
            sql.SQL(", ").join(sql.SQL("{} AS {}").format(sql.SQL(e), sql.Identifier(f"e{i}"))
                               for i, e in enumerate(exprs)),
            parent.hist)
        return list(self.conn.execute(probe).fetchone())

    def _ensure(self, kind: str, parents: list[Node], columns, definition: dict,
                insert_only: bool) -> Node:
        names = tuple(c.name for c in columns)
        exprs = tuple(c.expr for c in columns)
        signature = json.dumps([kind, [p.id for p in parents], list(zip(names, exprs)),
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
                    parents=tuple(p.id for p in parents), columns=names, exprs=exprs,
                    hist_ref=(NETWORK_SCHEMA, f"n{node_id}"), definition=definition,
                    insert_only=insert_only)
        self.conn.execute(
            """INSERT INTO argus_catalog.nodes
                   (node_id, kind, join_level, sequence_id, signature, definition,
                    hist_schema, hist_name, insert_only)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            (node_id, kind, level, seq, signature, json.dumps(definition), NETWORK_SCHEMA,
             f"n{node_id}", insert_only))
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO argus_catalog.edges VALUES (%s, %s, %s)",
                            [(node_id, i, p.id) for i, p in enumerate(parents, 1)])
            cur.executemany("INSERT INTO argus_catalog.node_columns VALUES (%s, %s, %s, %s)",
                            [(node_id, i, c, e) for i, (c, e) in enumerate(zip(names, exprs), 1)])
        compiler = COMPILERS[kind]
        execute_all(self.conn, compiler.create(node, parents))
        node = dataclasses.replace(node, types=self._record_types(node))
        execute_all(self.conn, compiler.backfill(node, parents))
        self.conn.execute(sql.SQL(
            "UPDATE argus_catalog.nodes SET hist_rows = (SELECT count(*) FROM {}) "
            "WHERE node_id = %s").format(node.hist), (node_id,))
        store_blocks(self.conn, node, parents)
        self.created.append(node)
        return node

    def _record_types(self, node: Node) -> tuple[str, ...]:
        rows = self.conn.execute(_COLUMN_TYPES, (node.hist.as_string(self.conn),)).fetchall()
        types = {name: (pg_type, hashable) for name, pg_type, hashable in rows}
        if not node.insert_only:
            for name in node.columns:
                if not types[name][1]:
                    raise QueryError(
                        f"column {name!r} has type {types[name][0]}, which PostgreSQL cannot "
                        "compare for equality, so argus cannot retract its rows here (an "
                        "aggregate, outer join, EXCEPT or DISTINCT is involved): cast it to a "
                        "comparable type such as text or jsonb")
        with self.conn.cursor() as cur:
            cur.executemany("UPDATE argus_catalog.node_columns SET type = %s "
                            "WHERE node_id = %s AND name = %s",
                            [(types[n][0], node.id, n) for n in node.columns])
        return tuple(types[n][0] for n in node.columns)

    def _index_join_keys(self, node: Node, left: Node, right: Node) -> None:
        """Index the parents' histories on the columns the join condition compares with
        the other side, so that a delta probes them instead of scanning."""
        self._record_indexes(node, join_keys(node.definition["condition"], left, right))

    def _record_indexes(self, node: Node, keys: list[tuple[Node, str]]) -> None:
        if node not in self.created or node.definition.get("indexes") is not None:
            return
        created = []
        for parent, column in keys:
            schema, table = parent.hist_ref
            name = short(f"argus_{table}_{column}_idx")
            self.conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ({})").format(
                sql.Identifier(name), parent.hist, sql.Identifier(column)))
            created.append([schema, name])
        self.conn.execute(
            "UPDATE argus_catalog.nodes SET definition = definition || %s WHERE node_id = %s",
            (json.dumps({"indexes": created}), node.id))


def join_keys(condition: str, left: Node, right: Node) -> list[tuple[Node, str]]:
    """(parent, column) pairs of a join condition worth indexing: a column of one side
    compared (=, <, <=, >, >=, BETWEEN) with an expression of the other side only."""
    tree = sqlglot.parse_one(condition, read="postgres")
    side = {"t1": left, "t2": right}
    found: list[tuple[Node, str]] = []

    def consider(column: exp.Expr, other: list[exp.Expr]) -> None:
        if not isinstance(column, exp.Column) or column.table not in side:
            return
        tables = {c.table for o in other for c in o.find_all(exp.Column)}
        if tables and tables <= {"t1", "t2"} - {column.table}:
            pair = (side[column.table], column.name)
            if pair not in found:
                found.append(pair)

    for node in tree.find_all(exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between):
        if isinstance(node, exp.Between):
            consider(node.this, [node.args["low"], node.args["high"]])
        else:
            consider(node.left, [node.right])
            consider(node.right, [node.left])
    return found


def store_blocks(conn: psycopg.Connection, node: Node, parents: list[Node]) -> None:
    """Compile the node's cycle code once, at creation; assemble() concatenates it."""
    block = node_block(node, parents, conn)
    conn.execute("UPDATE argus_catalog.nodes SET cycle_block = %s, flush_block = %s "
                 "WHERE node_id = %s",
                 (block.as_string(conn) if block is not None else None,
                  flush_block(node, parents, conn).as_string(conn), node.id))


def assemble(conn: psycopg.Connection) -> None:
    """Regenerate argus_net.cycle_program from the nodes' stored blocks. Called in the
    transaction of every change to the network, so code and network never disagree."""
    net = load(conn)
    blocks = {node_id: (cycle, flush) for node_id, cycle, flush in conn.execute(
        "SELECT node_id, cycle_block, flush_block FROM argus_catalog.nodes")}
    streams = [(name, net.nodes[node_id], time_column) for name, node_id, time_column in
               conn.execute("SELECT name, node_id, time_column FROM argus_catalog.streams "
                            "ORDER BY name")]
    outputs = {r[0] for r in conn.execute("SELECT output_node FROM argus_catalog.queries")}
    children: dict[int, list[Node]] = {}
    for node in net.nodes.values():
        for parent in set(node.parents):
            children.setdefault(parent, []).append(node)
    purges = [purge_block(node, children.get(node.id, [])) for node in net.nodes.values()
              if node.id not in outputs]
    body = program(streams, list(net.nodes),
                   [sql.SQL(blocks[n][0]) for n in net.nodes if blocks[n][0]],
                   [sql.SQL(blocks[n][1]) for n in net.nodes],
                   [p for p in purges if p is not None])
    conn.execute(sql.SQL("CREATE OR REPLACE FUNCTION {}(argus_run bigint) RETURNS void "
                         "LANGUAGE plpgsql AS {}").format(
        sql.Identifier(NETWORK_SCHEMA, "cycle_program"), sql.Literal(body.as_string(conn))))


def drop_unused(conn: psycopg.Connection) -> list[int]:
    """Drop every non-stream node that no query needs, children before parents, and the
    join-key indexes no remaining node asked for."""
    rows = conn.execute(
        """SELECT n.node_id, n.hist_schema, n.hist_name, n.definition->'indexes'
             FROM argus_catalog.nodes n
            WHERE n.kind <> 'stream'
              AND NOT EXISTS (SELECT 1 FROM argus_catalog.query_nodes q
                               WHERE q.node_id = n.node_id)
            ORDER BY n.join_level DESC, n.sequence_id DESC, n.node_id DESC""").fetchall()
    indexes = []
    for node_id, schema, name, node_indexes in rows:
        aux = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
            (NETWORK_SCHEMA, f"n{node_id}\\_%"))]
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.SQL(", ").join(
            [sql.Identifier(schema, name), node_delta(node_id)]
            + [sql.Identifier(NETWORK_SCHEMA, t) for t in aux if t != f"n{node_id}_delta"])))
        conn.execute("DELETE FROM argus_catalog.nodes WHERE node_id = %s", (node_id,))
        indexes += node_indexes or []
    for schema, index in indexes:
        still_used = conn.execute(
            "SELECT 1 FROM argus_catalog.nodes WHERE definition->'indexes' @> %s::jsonb",
            (json.dumps([[schema, index]]),)).fetchone()
        if not still_used:
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(schema, index)))
    return [r[0] for r in rows]
