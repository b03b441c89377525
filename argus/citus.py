"""argus on a Citus coordinator (issue 24, its first slice): the network runs on the
coordinator as on one server, and a stream's history can be a distributed table,
sharded over the workers by one of its columns (`distribute`), so that the nodes
reading it (an aggregate grouped by that column, a selection, a join on it) run on the
shards. Joins on another column repartition (citus.enable_repartition_joins, set for
the database here).

Citus opens its connections to the workers as the role running the statement, and
argus runs cycles and registrations as its owner role, so on Citus that role can log
in (argus.roles.setup): give it a way to authenticate between the nodes
(pg_dist_authinfo or a .pgpass) and none from elsewhere (pg_hba.conf).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import psycopg
import sqlglot
from psycopg import sql
from sqlglot import exp

from . import roles
from .errors import ArgusError, UnknownColumnError, UnknownStreamError, UnsupportedQueryError
from .frontend.analyze import Analyzed
from .nodes import Node
from .nodes.base import virtual
from .names import CYCLE_LOCK, check_name, stream_history, stream_inbox
from .streams import stream_schemas


def installed(conn: psycopg.Connection) -> bool:
    """Is this database a Citus coordinator's (the extension created in it)?"""
    return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'"
                        ).fetchone() is not None


def distributed(conn: psycopg.Connection) -> dict[str, str]:
    """Each stream whose history is distributed, and its distribution column."""
    if not installed(conn):
        return {}
    return dict(conn.execute(
        """SELECT s.name, column_to_column_name(p.logicalrelid, p.partkey)
             FROM argus_catalog.streams s
             JOIN pg_dist_partition p ON p.logicalrelid = format('%I.%I', 'argus_streams',
                                                                  s.name)::regclass
            WHERE p.partmethod = 'h' ORDER BY 1""").fetchall())


def sharding(conn: psycopg.Connection) -> dict[str, tuple[str, frozenset[str]]]:
    """Each distributed stream's distribution column and NOT NULL columns (its own
    among them): the columns a node over it may be sharded by (shard_key)."""
    by = distributed(conn)
    return {name: (by[name], schema.not_null | {by[name]})
            for name, schema in stream_schemas(conn).items() if name in by}


def distribute(conn: psycopg.Connection, stream: str, column: str) -> None:
    """Shard the stream's history over the workers by `column` (its rows move there)."""
    stream = check_name(stream, "stream")
    if not installed(conn):
        raise ArgusError("this database is not a Citus coordinator's (no citus extension): "
                         "a stream's history can be distributed only there")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", CYCLE_LOCK)
        schema = stream_schemas(conn).get(stream)
        if schema is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        if column not in schema.column_names:
            raise UnknownColumnError(f"stream {stream!r} has no column {column!r} "
                                     f"(it has: {', '.join(schema.column_names)})")
        if schema.primary_key is not None:  # (its flush MERGEs into the history by key)
            raise ArgusError(f"{stream!r} is a table: its history takes each cycle's changes "
                             "by MERGE, which Citus 13 cannot run from the coordinator into a "
                             "distributed table; only streams' histories are distributed")
        already = distributed(conn).get(stream)
        if already:
            raise ArgusError(f"stream {stream!r} is distributed already, by {already}")
        conn.execute(sql.SQL("ALTER DATABASE {} SET citus.enable_repartition_joins = on")
                     .format(sql.Identifier(conn.info.dbname)))
        # a node kept as a view (a wide selection, a large join) over a distributed
        # history is read through set operations Citus 13 cannot plan (a changes view's
        # UNION ALL of EXCEPT ALL): every node keeps a table
        conn.execute("UPDATE argus_catalog.settings SET virtual_selectivity = NULL, "
                     "virtual_join_growth = NULL")
        roles.become_owner(conn)
        if column not in schema.not_null:
            _not_null(conn, stream, column)
        conn.execute("SELECT create_distributed_table(%s, %s)",
                     (stream_history(stream).as_string(conn), column))
        _shard_registered(conn)
        conn.execute("UPDATE argus_catalog.settings SET program_stale = true")
    conn.execute("SET citus.enable_repartition_joins = on")  # (this session's too)


def _shard_registered(conn: psycopg.Connection) -> None:
    """The nodes registered before that can be sharded now (shard_key), sharded, their
    code compiled again for it (their rows move to the workers)."""
    from .network import assemble, load, store_blocks

    nodes, streams, sharded = load(conn).nodes, sharding(conn), []
    for node in nodes.values():
        if node.sharded_by is None and (key := shard_key(node, nodes.__getitem__, streams)):
            nodes[node.id] = shard(conn, node, key)
            store_blocks(conn, nodes[node.id], [nodes[p] for p in node.parents])
            sharded.append(node.id)
    if sharded:
        assemble(conn, check=sharded)


def _not_null(conn: psycopg.Connection, stream: str, column: str) -> None:
    """Citus keeps no row without its distribution column: a row loaded with none would
    fail every cycle's claim, and stop every query. The column becomes NOT NULL in the
    inbox (a load with such a row fails, naming the column, and loads nothing) and in
    the history, unless rows are there without it."""
    for table in (stream_inbox(stream), stream_history(stream)):
        if conn.execute(sql.SQL("SELECT EXISTS (SELECT FROM {} WHERE {} IS NULL)").format(
                table, sql.Identifier(column))).fetchone()[0]:
            raise ArgusError(f"stream {stream!r} holds rows whose {column} is null (in "
                             f"{table.as_string(conn)}): Citus keeps no row without its "
                             "distribution column; distribute by a column every row has")
        conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET NOT NULL").format(
            table, sql.Identifier(column)))


def shard_key(node: Node, load: Callable[[int], Node],
              streams: dict[str, tuple[str, frozenset[str]]]) -> str | None:
    """The column to shard the node's history by, or None to keep it on the coordinator.
    `streams`: each distributed stream's distribution column and NOT NULL columns.

    Sharded: an insert-only selection or inner join, or an aggregate (by a group
    column), over distributed streams only, with a column that copies a NOT NULL column
    of such a stream (Citus keeps no row without its distribution column), the stream's
    own distribution column first. Tables sharded by columns of one type are co-located:
    a join of two such histories on their keys runs on the shards, pairwise. Kept on the
    coordinator: nodes whose flush MERGEs (DISTINCT, set operations, COUNT(DISTINCT)'s
    counts), which Citus 13 cannot run from the coordinator into a distributed table; a
    signed selection or join, whose retraction deletes one copy of a row by its ctid;
    and every other kind, not tried yet."""
    if not streams or virtual(node) or node.kind not in ("select", "join", "aggregate"):
        return None
    if node.kind != "aggregate" and not node.insert_only:
        return None
    if node.kind == "join" and (node.definition.get("kind") != "inner"
                                or "lazy" in node.definition):
        return None
    if node.kind == "aggregate" and (node.spec.distinct_specs or not node.spec.group_names):
        return None
    if not _over(node, load, set(streams)):
        return None
    keys = []
    for column in node.spec.group_names if node.kind == "aggregate" else node.columns:
        stream, origin = _origin(node, column, load) or (None, None)
        if stream in streams and origin in streams[stream][1]:
            keys.append((origin != streams[stream][0], column))
    return min(keys)[1] if keys else None


def _over(node: Node, load: Callable[[int], Node], streams: set[str]) -> bool:
    """Does every stream the node reads have a distributed history?"""
    if node.kind == "stream":
        return node.hist_ref[1] in streams
    return all(_over(load(p), load, streams) for p in node.parents)


def _origin(node: Node, column: str, load: Callable[[int], Node]) -> tuple[str, str] | None:
    """(stream, its column) that the node's column copies, through selections, joins
    and groups; None if it is computed."""
    if node.kind == "stream":
        return node.hist_ref[1], column
    if node.kind not in ("select", "join", "aggregate") or column not in node.columns:
        return None
    expr = sqlglot.parse_one(node.exprs[node.columns.index(column)], read="postgres")
    if not isinstance(expr, exp.Column) or not expr.table.startswith("t"):
        return None
    parent = int(expr.table[1:]) - 1
    if not 0 <= parent < len(node.parents):
        return None
    return _origin(load(node.parents[parent]), expr.name, load)


def shard(conn: psycopg.Connection, node: Node, key: str) -> Node:
    """Distribute the node's history by `key` (its rows move to the workers); its cycle
    code must be compiled after, for the flushes' shard-aware forms."""
    conn.execute("SELECT create_distributed_table(%s, %s)", (node.hist.as_string(conn), key))
    conn.execute("UPDATE argus_catalog.nodes SET sharded_by = %s WHERE node_id = %s",
                 (key, node.id))
    return dataclasses.replace(node, sharded_by=key)


def check_query(conn: psycopg.Connection, analyzed: Analyzed) -> None:
    """Refuse what a distributed history cannot do yet: a window against the stream
    clock (argus_now()), which Citus would evaluate on the workers, where the clock is
    not (a copy of it as a reference table cannot be read from a shard's query)."""
    sharded = set(analyzed.streams) & set(distributed(conn))
    if sharded and {"argus_now", "argus.clock_now"} & analyzed.functions:
        raise UnsupportedQueryError(
            f"argus_now() over stream {sorted(sharded)[0]!r}, whose history is distributed "
            "(Citus): a window against the stream clock over a distributed history is not "
            "supported yet")
