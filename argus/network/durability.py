"""Derived state without WAL (settings.durability, catalog/schema.sql).

Every table argus keeps besides the stream histories, inboxes and catalog is a function
of the streams' histories: with durability 'derived' those tables are UNLOGGED, so a
cycle's flushes write no WAL. A crash empties unlogged tables, and with them the one row
of argus_catalog.derived_intact: from then on results views and cycles refuse to run
(argus.intact()) until argus's owner rebuilds every node from the stream histories, in
evaluation order, by the statements that backfilled it (program.rebuild) — which it does
when it next connects or runs a cycle.
"""

from __future__ import annotations

import logging
import time

import psycopg
from psycopg import sql

from .. import roles
from ..errors import STATE_LOST, SettingError
from ..names import LOCK_CYCLES
from ..nodes import lazy
from ..nodes.base import virtual
from ..program import rebuild
from ..settings import pinned_session
from .reads import load
from .stored import execute_all

log = logging.getLogger(__name__)  # (argus's command line prints its messages)

LOST = STATE_LOST  # (in argus.intact()'s message: a cycle refused for it rebuilds, runs again)


# a crash emptied the network's unlogged tables (derived_intact's one row with them)
_LOST = ("SELECT durability = 'derived' AND NOT EXISTS (SELECT FROM argus_catalog.derived_intact)"
         " FROM argus_catalog.settings")


def settle(conn: psycopg.Connection) -> list[int] | None:
    """At an owner's connect, in one round trip when nothing was lost: a network on
    Citus keeps its tables logged (a catalog made before Citus was installed says so
    now); a crash's losses rebuilt."""
    (lost_now,) = conn.execute(
        "WITH citus AS (UPDATE argus_catalog.settings SET durability = 'logged' "
        "WHERE durability = 'derived' AND to_regclass('pg_dist_partition') IS NOT NULL "
        "RETURNING 1) SELECT NOT EXISTS (SELECT FROM citus) AND lost FROM (" + _LOST
        + ") AS l(lost)").fetchone()
    return rebuild_if_lost(conn) if lost_now else None


def lost(conn: psycopg.Connection) -> bool:
    """Did a crash empty the network's unlogged tables?"""
    return conn.execute(_LOST).fetchone()[0]


def rebuild_if_lost(conn: psycopg.Connection) -> list[int] | None:
    """Rebuild the network's state after a crash, in one transaction under the cycle
    lock: the nodes rebuilt (None: nothing was lost)."""
    if not lost(conn):
        return None
    with conn.transaction(), pinned_session(conn):  # (evaluated as cycles evaluate)
        conn.execute(LOCK_CYCLES)
        roles.become_owner(conn)
        if not lost(conn):
            return None  # another session rebuilt it while this one waited
        net = load(conn)
        todo = [n for n in net.nodes.values() if not n.loaded and not virtual(n)]
        log.info("argus: a crash emptied the network's state; rebuilding its %d nodes from "
                 "the stream histories", len(todo))
        started = time.perf_counter()
        rebuilt = []
        for node in todo:  # (streams and views are logged, or nothing)
            at = time.perf_counter()
            if lazy.is_lazy(node):  # empty with no key done: completed as probed
                for table in (node.hist, lazy.done(node)):
                    conn.execute(sql.SQL("DELETE FROM {}").format(table))
            else:
                parents = [lazy.readable(net.nodes[p]) for p in node.parents]
                execute_all(conn, rebuild(node, parents))
            rebuilt.append(node.id)
            log.info("argus: rebuilt node %d (%s), %d of %d, in %.1f s", node.id, node.kind,
                     len(rebuilt), len(todo), time.perf_counter() - at)
        log.info("argus: the network is rebuilt (%.1f s); cycles go on",
                 time.perf_counter() - started)
        conn.execute("INSERT INTO argus_catalog.derived_intact DEFAULT VALUES")
    return rebuilt


def persist(conn: psycopg.Connection, node_id: int | None = None) -> int:
    """The network's tables (or one node's) logged or not as settings.durability says,
    under the cycle lock when all of them change: the number of tables changed."""
    if node_id is not None:
        return conn.execute("SELECT argus.persist_derived(%s)", (node_id,)).fetchone()[0]
    try:
        with conn.transaction():
            conn.execute(LOCK_CYCLES)
            roles.become_owner(conn)
            return conn.execute("SELECT argus.persist_derived()").fetchone()[0]
    except psycopg.errors.FeatureNotSupported as exc:
        raise SettingError(exc.diag.message_primary.removeprefix("argus: ")) from None
