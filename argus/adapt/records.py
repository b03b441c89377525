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
# The periodic check plans a query again only when what one of its nodes writes per
# cycle moved by more than MOVED of the larger of then and now (and MOVED_ROWS rows),
# over the last UNCHANGED_CYCLES cycles that took rows against those before the decision
# that last planned it: the order's prices are made of those rows; unchanged, they
# choose the same tree (planning a group of queries again costs ~0.2 s). At most
# MAX_UNCHANGED such checks in a row: then it is planned again whatever moved.
MOVED = 1 / 3
MOVED_ROWS = 10
UNCHANGED_CYCLES = 5
MAX_UNCHANGED = 10


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


def moved(then: dict[int, float], now: dict[int, float]) -> list[tuple[int, float, float]]:
    """The nodes whose rows written per cycle moved enough to price the query again
    (MOVED, MOVED_ROWS): (node, then, now), the largest move first."""
    out = [(node, then.get(node, 0.0), rate) for node, rate in now.items()]
    out = [(n, a, b) for n, a, b in out
           if abs(b - a) > MOVED * max(a, b) and abs(b - a) >= MOVED_ROWS]
    return sorted(out, key=lambda m: -abs(m[2] - m[1]))


def unchanged(conn: psycopg.Connection, query: str) -> tuple[int, str] | None:
    """Whether the periodic check may leave the query as its last re-plan decided:
    (that decision, why) when nothing it is priced by moved since (`moved`); None when
    it must be planned again — never planned, evaluated by re-running it, its last
    decision waited for its windows or failed, MAX_UNCHANGED checks already left it,
    too few cycles measured either side, or a node's rows moved."""
    row = conn.execute(
        """WITH q AS (SELECT query_id, changes_after FROM argus_catalog.queries
                       WHERE name = %(q)s AND evaluate = 'incremental'),  -- (a re-run's
                                                           -- cost grows as the data)
                last AS (SELECT m.migration_id, m.after_run, m.waited OR m.why LIKE 'failed:%%'
                                  AS unsettled
                           FROM argus_catalog.migrations m
                          WHERE m.query = %(q)s AND m.unchanged_since IS NULL
                          ORDER BY m.migration_id DESC LIMIT 1),
                made AS (  -- the runs of the nodes it has: after its registration or
                           -- migration (changes_after), and another's that made its nodes
                         SELECT max(n.created_at) AS at, max(q.changes_after) AS run
                           FROM q JOIN argus_catalog.query_nodes qn USING (query_id)
                           JOIN argus_catalog.nodes n ON n.node_id = qn.node_id),
                sides AS (SELECT s.now, r.run_id FROM last CROSS JOIN made
                          CROSS JOIN (VALUES (false), (true)) s(now)
                          CROSS JOIN LATERAL (
                              SELECT run_id FROM argus_catalog.runs r
                               WHERE r.status = 'ok' AND r.rows_in > 0
                                 AND r.started_at > made.at
                                 AND r.run_id > coalesce(made.run, 0)
                                 AND (r.run_id > last.after_run) = s.now
                               ORDER BY r.run_id DESC LIMIT %(cycles)s) r)
           SELECT last.migration_id, last.after_run, last.unsettled,
                  (SELECT count(*) FROM argus_catalog.migrations c
                    WHERE c.query = %(q)s AND c.unchanged_since = last.migration_id),
                  (SELECT count(*) FILTER (WHERE NOT now) FROM sides),
                  (SELECT count(*) FILTER (WHERE now) FROM sides),
                  (SELECT jsonb_object_agg(r.node_id || ':' || r.now, r.rate) FROM (
                       SELECT qn.node_id, s.now,
                              sum(coalesce(w.inserted + w.retracted, 0))::float8
                                / count(DISTINCT s.run_id) AS rate
                         FROM q JOIN argus_catalog.query_nodes qn USING (query_id)
                        CROSS JOIN sides s
                         LEFT JOIN argus_catalog.run_nodes w
                                ON w.run_id = s.run_id AND w.node_id = qn.node_id
                        GROUP BY qn.node_id, s.now) r)
             FROM last, q""", {"q": query, "cycles": UNCHANGED_CYCLES}).fetchone()
    if row is None:
        return None
    decision, after_run, unsettled, checks, before, since, rates = row
    if unsettled or checks >= MAX_UNCHANGED or min(before, since) < 2:
        return None
    side = {True: {}, False: {}}
    for key, rate in (rates or {}).items():
        node, now = key.split(":")
        side[now == "true"][int(node)] = rate
    if moved(side[False], side[True]):
        return None
    return decision, (
        f"not planned again: what each of its {len(side[True])} nodes wrote per cycle "
        f"moved by less than a third in its last {since} cycles with rows from the "
        f"{before} before the decision that planned it after run {after_run}; it is "
        f"planned again once one moves more, or after {MAX_UNCHANGED} such checks")


def log_migration(conn: psycopg.Connection, **row) -> int:
    """A decision logged; `strategy` and `after_run` (the last cycle) as they are now
    unless given."""
    if "strategy" not in row or "after_run" not in row:
        strategy, last_run = conn.execute(
            "SELECT migration, (SELECT coalesce(max(run_id), 0) FROM argus_catalog.runs) "
            "FROM argus_catalog.settings").fetchone()
        row = {"strategy": strategy, "after_run": last_run} | row
    columns = list(row)
    (migration_id,) = conn.execute(sql.SQL(
        "INSERT INTO argus_catalog.migrations ({}) VALUES ({}) RETURNING migration_id").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(sql.Placeholder() * len(columns))), list(row.values())).fetchone()
    return migration_id
