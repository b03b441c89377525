"""What a migration reads and writes of the catalog: the decisions (logged in
argus_catalog.migrations) and the nodes' recent cost."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from ..mqo.replan import HELD_RECHECK, Prediction
from ..nodes import LOADED

RECENT = 10  # the cycles whose timings say what the old nodes cost
WORTH_MS = 1.0  # a query whose own nodes took less per cycle has nothing to gain
UNKNOWN = Prediction(None, 0.0, 0.0, [])  # a query that could not be planned again
# a query planned again this many times in a row while its windows turned over (each
# HELD_RECHECK cycles after the last) is then planned again only as any other: windows
# whose rows never settle (bursts) must not make it cost a re-plan every few cycles
MAX_WAITS = 4


@dataclass(frozen=True)
class Decision:
    query: str
    prediction: Prediction
    migrated: bool  # (a dry run: would be)
    why: str
    forced: bool = False
    build_ms: float | None = None
    migration_id: int | None = None


def only_used_by(conn: psycopg.Connection, queries: list[int]) -> frozenset[int]:
    """The nodes (not streams) only these queries use: of one, its own nodes."""
    return frozenset(r[0] for r in conn.execute(
        """SELECT DISTINCT q.node_id FROM argus_catalog.query_nodes q
             JOIN argus_catalog.nodes n USING (node_id)
            WHERE q.query_id = ANY(%(q)s) AND n.kind <> ALL(%(loaded)s)
              AND NOT EXISTS (SELECT FROM argus_catalog.query_nodes o
                               WHERE o.node_id = q.node_id AND o.query_id <> ALL(%(q)s))""",
        {"q": queries, "loaded": LOADED}))


def recent_ms(conn: psycopg.Connection, nodes: set[int]) -> float | None:
    """The nodes' time per cycle over the last RECENT cycles (None: no cycle)."""
    (ms,) = conn.execute(
        """WITH r AS (SELECT run_id FROM argus_catalog.runs WHERE status = 'ok'
                       ORDER BY run_id DESC LIMIT %s)
           SELECT (SELECT coalesce(sum(n.ms + coalesce(n.flush_ms, 0)), 0)
                     FROM argus_catalog.run_nodes n JOIN r USING (run_id)
                    WHERE n.node_id = ANY(%s)) / nullif((SELECT count(*) FROM r), 0)""",
        (RECENT, sorted(nodes))).fetchone()
    return ms


def recheck(conn: psycopg.Connection, query: str, wait: bool, last_run: int
            ) -> tuple[dict, str]:
    """Of a decision that waits for the query's windows to turn over: the columns it
    is logged with (that it waited; when it is planned again, migrations.recheck_at),
    and what its why says of when."""
    if not wait:
        return {"waited": False, "recheck_at": None}, ""
    waits, periodic = conn.execute(
        """SELECT count(*), (SELECT reoptimize_every IS NOT NULL FROM argus_catalog.settings)
             FROM argus_catalog.migrations m
            WHERE m.query = %(q)s AND m.waited
              AND m.migration_id > coalesce((SELECT max(o.migration_id)
                                               FROM argus_catalog.migrations o
                                              WHERE o.query = %(q)s AND NOT o.waited), 0)""",
        {"q": query}).fetchone()
    if not periodic:
        return {"waited": True, "recheck_at": None}, \
            "; planned again only when asked (settings.reoptimize_every is not set)"
    if waits + 1 >= MAX_WAITS:
        return {"waited": True, "recheck_at": None}, (
            f"; its windows have not turned over in {waits + 1} re-plans: it is planned "
            "again as any other query")
    return {"waited": True, "recheck_at": last_run + HELD_RECHECK}, \
        f"; planned again in {HELD_RECHECK} cycles"


def log_migration(conn: psycopg.Connection, **row) -> int:
    columns = list(row)
    (migration_id,) = conn.execute(sql.SQL(
        "INSERT INTO argus_catalog.migrations ({}) VALUES ({}) RETURNING migration_id").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(sql.Placeholder() * len(columns))), list(row.values())).fetchone()
    return migration_id
