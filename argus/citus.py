"""argus on a Citus coordinator (issue 24): the network runs on the coordinator as on
one server, and a stream's history can be a distributed table, sharded over the
workers by one of its columns (`distribute`, which makes it NOT NULL), or a reference
table copied to every node (`replicate`, for small streams); the nodes over such streams
that Citus can run are then sharded too, co-located with the distributed ones
(argus.network.shards). The database takes the Citus settings argus needs (SETTINGS).

Citus opens its connections to the workers as the role running the statement, and
argus runs cycles and registrations as its owner role, so on Citus that role can log
in (argus.roles.setup): give it a way to authenticate between the nodes
(pg_dist_authinfo or a .pgpass) and none from elsewhere (pg_hba.conf).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from . import roles
from .settings import pinned_session
from .errors import ArgusError, UnknownColumnError, UnknownStreamError
from .network.placement import installed, placed
from .network.placement import distributed, replicated  # noqa: F401 (what argus.api reads)
from .network.shards import place_all, sharding
from .names import LOCK_CYCLES, check_name, stream_history, stream_inbox
from .nodes import JOINS
from .streams import stream_schemas


MAX_SHARDS = 64_000  # Citus's own bound on a table's shard count
# Citus's settings for the database, once a stream's history is on the workers: joins on
# other columns than the distribution's repartition; a statement writes to a worker's
# shards over one connection, not one each (a cycle or registration that appended to a
# distributed history over several, then joined it with a reference table on that
# worker, failed: "cannot perform query with placements that were modified over
# multiple connections")
SETTINGS = {"citus.enable_repartition_joins": "on",
            "citus.multi_shard_modify_mode": "sequential"}


def distribute(conn: psycopg.Connection, stream: str, column: str,
               shards: int | None = None) -> None:
    """Shard the stream's history over the workers by `column` (its rows move there),
    into `shards` shards: by default two a worker. Each statement over a distributed
    table is a command per shard, and a cycle's are many small ones: Citus's 32 made a
    100-row cycle 16x slower than on one server on this machine (docs/scale-out.md)."""
    if shards is not None and not 1 <= shards <= MAX_SHARDS:
        raise ArgusError(f"a stream is distributed into 1 to {MAX_SHARDS:,} shards, "
                         f"not {shards}")
    _place(conn, stream, column, shards)


def replicate(conn: psycopg.Connection, stream: str) -> None:
    """Make the stream's history a reference table: a copy on every node, so that the
    nodes joining it with distributed streams are sharded too (each shard joins its
    own rows with the whole copy). For small streams (dimensions): every row the
    stream takes is written to every node."""
    _place(conn, stream, None, None)


def _place(conn: psycopg.Connection, stream: str, column: str | None,
           shards: int | None) -> None:
    """The stream's history distributed by `column` (None: copied to every node), and
    the nodes registered over it sharded where they can be now."""
    stream = check_name(stream, "stream")
    how = "distributed" if column else "replicated"
    if not installed(conn):
        raise ArgusError("this database is not a Citus coordinator's (no citus extension): "
                         f"a stream's history can be {how} only there")
    with conn.transaction(), pinned_session(conn):
        conn.execute(LOCK_CYCLES)
        schema = stream_schemas(conn).get(stream)
        if schema is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        if column is not None and column not in schema.column_names:
            raise UnknownColumnError(f"stream {stream!r} has no column {column!r} "
                                     f"(it has: {', '.join(schema.column_names)})")
        if schema.primary_key is not None:  # (its flush changes the history by ctid)
            raise ArgusError(f"{stream!r} is a table: its history takes each cycle's changes "
                             "at the row ids its claim read, which Citus 13 cannot modify from "
                             "the coordinator; only streams' histories are distributed or "
                             "replicated")
        if stream in (on_workers := placed(conn)):
            already = on_workers[stream]
            raise ArgusError(f"stream {stream!r} is " + (f"distributed already, by {already}"
                                                         if already else "replicated already"))
        _check_registered(conn, stream, how)
        for setting, value in SETTINGS.items():
            conn.execute(sql.SQL("ALTER DATABASE {} SET {} = {}").format(
                sql.Identifier(conn.info.dbname), sql.Identifier(*setting.split(".")),
                sql.Literal(value)))
        # a node kept as a view (a wide selection, a large join) over a distributed
        # history is read through set operations Citus 13 cannot plan (a changes view's
        # UNION ALL of EXCEPT ALL): every node keeps a table
        conn.execute("UPDATE argus_catalog.settings SET virtual_selectivity = NULL, "
                     "virtual_join_growth = NULL")
        roles.become_owner(conn)
        history = stream_history(stream).as_string(conn)
        if column is None:
            conn.execute("SELECT create_reference_table(%s)", (history,))
        else:
            if column not in schema.not_null:
                _not_null(conn, stream, column)
            if shards is None:
                (workers,) = conn.execute(
                    "SELECT count(*) FROM pg_dist_node WHERE groupid > 0 AND isactive "
                    "AND noderole = 'primary'").fetchone()
                shards = 2 * max(workers, 1)
            conn.execute("SELECT create_distributed_table(%s, %s, shard_count => %s)",
                         (history, column, shards))
        _shard_registered(conn)
        conn.execute("UPDATE argus_catalog.program_state SET program_stale = true")
    for setting, value in SETTINGS.items():  # (this session's too)
        conn.execute("SELECT set_config(%s, %s, false)", (setting, value))


def _check_registered(conn: psycopg.Connection, stream: str, how: str) -> None:
    """Refuse to distribute (or replicate) a stream that a registered query reads in a
    way Citus may not plan once its history is on the workers: through a join kept as a
    view (its changes view, a UNION ALL of EXCEPT ALL over the histories: "a column
    definition list is required for functions returning record"), or by an outer, semi
    or anti join over it, which Citus plans only with tables co-located with it ("direct
    joins between distributed and local tables are not supported", at the first cycle
    that brought the other side rows). Registered again after, such a query is planned
    for the history as it is then, or refused."""
    found = conn.execute(
        """WITH RECURSIVE below(node_id) AS (
               SELECT node_id FROM argus_catalog.streams WHERE name = %(stream)s
               UNION SELECT e.child_id FROM argus_catalog.edges e
                       JOIN below b ON e.parent_id = b.node_id)
           SELECT q.name, (n.layout->>'virtual')::boolean
             FROM below JOIN argus_catalog.nodes n USING (node_id)
             JOIN argus_catalog.query_nodes qn USING (node_id)
             JOIN argus_catalog.queries q USING (query_id)
            WHERE n.kind = ANY(%(joins)s) AND ((n.layout->>'virtual')::boolean
                  OR n.definition->>'join_type' <> 'inner')
            ORDER BY 1 LIMIT 1""", {"stream": stream, "joins": JOINS}).fetchone()
    if found:
        name, view = found
        why = (f"keeps a join over it as a view, which Citus 13 cannot read once the history "
               f"is {how}" if view else "reads it in an outer, semi or anti join, which "
               "Citus plans only with tables co-located with it")
        raise ArgusError(f"stream {stream!r} cannot be {how}: query {name!r} {why}; "
                         f"unregister it, make the stream {how}, and register it again "
                         "(joins are then kept as tables; an outer, semi or anti join is "
                         "refused if Citus cannot plan it)")


def _shard_registered(conn: psycopg.Connection) -> None:
    """The nodes registered before, sharded where they can be now (their rows move to
    the workers, their code is compiled again)."""
    from .network import assemble, load
    from .network.stored import store_blocks

    nodes = load(conn).nodes
    moved, compiled = place_all(conn, [n for n in nodes.values() if not n.loaded],
                                nodes.__getitem__, sharding(conn))
    now = nodes | {n.id: n for n in moved}
    for node in moved:  # (a join probes no stream history Citus now holds: nodes/join)
        if node.kind_of.joins and node.id not in compiled and any(
                now[p].loaded for p in node.parents):
            store_blocks(conn, node, [now[p] for p in node.parents])
            compiled.add(node.id)
    if compiled:
        assemble(conn, check=sorted(compiled))


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
