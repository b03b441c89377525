"""Node histories over Citus's workers (issue 24): which streams' histories are
distributed, and which nodes over them are sharded too, by what (`shard_keys`). The
node kinds' code finds a sharded node's rows by its key where one server uses ctids
(Node.sharded_by). argus.citus distributes streams; the builder shards new nodes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from ..nodes import JOINS, Node
from ..nodes.base import virtual
from . import records
from .placement import placed
from .stored import store_blocks


@dataclass(frozen=True)
class Sharded:
    """A stream's history on the workers, as the nodes over it may be sharded."""
    column: str | None  # its distribution column; None: a reference table
    keys: frozenset[str]  # the columns a node over it may be sharded by (none of them null)
    shards: int  # its shard count, which the nodes sharded with it take (co-location)


def sharding(conn: psycopg.Connection) -> dict[str, Sharded]:
    """Each stream on the workers, as the nodes over it may be sharded (shard_keys): a
    reference table gives no key (a node over it and a distributed stream is sharded by
    the latter's), and a node over reference tables alone stays on the coordinator."""
    by = placed(conn)
    return {name: Sharded(by[name], frozenset(not_null) | {by[name]}, shards)
            if by[name] is not None else Sharded(None, frozenset(), 1)
            for name, not_null, shards in conn.execute(
                """SELECT s.name, s.not_null, (SELECT count(*) FROM pg_dist_shard d
                                                 WHERE d.logicalrelid = h.oid)
                     FROM argus.stream_schemas() s
                     JOIN pg_class h ON h.oid = to_regclass(format('%I.%I', 'argus_streams',
                                                                   s.name))""")
            if name in by} if by else {}


def shard_keys(node: Node, load: Callable[[int], Node],
               streams: dict[str, Sharded]) -> list[tuple[str, int]]:
    """The columns the node's history may be sharded by, best first, each with the
    shard count it would take; none to keep it on the coordinator.

    Sharded: an insert-only selection or inner join, or an aggregate (by a group
    column), over streams on the workers only (distributed, or reference tables), with
    a column that copies a NOT NULL column of a distributed one (Citus keeps no row
    without its distribution column), the stream's own distribution column first, then
    in the node's column order (the first whose type Citus can hash is taken:
    place_all); into as many shards as that stream's history, so that Citus co-locates
    them (tables with as many shards, sharded by columns of one type): a join of two
    such histories on their keys runs shard by shard. Kept on the coordinator: nodes
    whose flush MERGEs (DISTINCT, set operations, COUNT(DISTINCT)'s counts), which Citus
    13 cannot run from the coordinator into a distributed table; a signed selection or
    join, whose retraction deletes one copy of a row by its ctid; and every other kind,
    not tried yet."""
    candidates = node.kind_of.shard_keys(node) if streams and not virtual(node) else ()
    if not candidates or not _over(node, load, set(streams)):
        return []
    keys = []
    for i, column in enumerate(candidates):
        stream, origin = _origin(node, column, load) or (None, None)
        if stream in streams and origin in streams[stream].keys:
            keys.append((origin != streams[stream].column, i, column, streams[stream].shards))
    return [key[2:] for key in sorted(keys)]


def _over(node: Node, load: Callable[[int], Node], streams: set[str]) -> bool:
    """Is every stream the node reads on the workers (distributed, or a reference
    table)?"""
    if node.loaded:
        return node.hist_ref[1] in streams
    return all(_over(load(p), load, streams) for p in node.parents)


def _origin(node: Node, column: str, load: Callable[[int], Node]) -> tuple[str, str] | None:
    """(stream, its column) that the node's column copies, through selections, joins
    and groups; None if it is computed (or may be null where the column it copies is
    not: an outer join's)."""
    if node.loaded:
        return node.hist_ref[1], column
    copied = node.kind_of.copies(node, column)
    return None if copied is None else _origin(load(node.parents[copied[0]]), copied[1], load)


def outer_read(conn: psycopg.Connection) -> set[int]:
    """The nodes an outer, semi or anti join reads: they stay on the coordinator (Citus
    plans such a join of a distributed table only with one co-located with it, never
    with a table of the coordinator's)."""
    return {n for (n,) in conn.execute(
        """SELECT e.parent_id FROM argus_catalog.edges e
             JOIN argus_catalog.nodes n ON n.node_id = e.child_id
            WHERE n.kind = ANY(%s) AND n.definition->>'join_type' <> 'inner'""",
        (JOINS,))}


def place_all(conn: psycopg.Connection, nodes: list[Node], load: Callable[[int], Node],
              streams: dict[str, Sharded], local: frozenset[int] = frozenset()
              ) -> tuple[list[Node], set[int]]:
    """The nodes, each sharded if it can be (shard_keys), unless an outer join reads it
    or it is in `local`, or as its table is (one taken over from an old node, a
    migration's answer, may be distributed already); the code of those that changed
    compiled again, and of the joins over them; and the ids of the nodes compiled.
    `streams`: sharding(conn)."""
    if not streams:
        return nodes, set()
    kept, done, moved = outer_read(conn) | local, [], set()
    for node in nodes:
        (by,) = conn.execute(
            "SELECT (SELECT column_to_column_name(logicalrelid, partkey) "
            "FROM pg_dist_partition WHERE logicalrelid = to_regclass(%s))",
            (node.hist.as_string(conn),)).fetchone()
        if by is None and node.id not in kept:
            by = _distribute(conn, node, shard_keys(node, load, streams))
        if by != node.sharded_by:
            node = _record(conn, node, by)
            store_blocks(conn, node, [load(p) for p in node.parents])
            moved.add(node.id)
        done.append(node)
    compiled = set(moved)
    for node in done:  # (a join compiled before a parent moved probes it no more: nodes/join)
        if node.kind_of.joins and node.id not in moved and moved & set(node.parents):
            store_blocks(conn, node, [load(p) for p in node.parents])
            compiled.add(node.id)
    return done, compiled


def _distribute(conn: psycopg.Connection, node: Node, keys: list[tuple[str, int]]
                ) -> str | None:
    """Distribute the node's history (its rows move to the workers) by the first of
    `keys` whose type Citus can hash (money, bit have no hash operator class), into as
    many shards as it says; that key, or None."""
    for key, shards in keys:
        try:
            with conn.transaction():
                conn.execute("SELECT create_distributed_table(%s, %s, shard_count => %s)",
                             (node.hist.as_string(conn), key, shards))
                return key
        except psycopg.errors.UndefinedObject:  # (no default operator class for hash)
            continue
    return None


def unshard(conn: psycopg.Connection, node: Node) -> Node:
    """The node's history back on the coordinator (its rows move there); its cycle code
    must be compiled again after."""
    conn.execute("SELECT undistribute_table(%s)", (node.hist.as_string(conn),))
    return _record(conn, node, None)


def _record(conn: psycopg.Connection, node: Node, key: str | None) -> Node:
    records.set_sharded_by(conn, node.id, key)
    return dataclasses.replace(node, sharded_by=key)
