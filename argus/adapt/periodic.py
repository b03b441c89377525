"""When queries are planned again: every settings.reoptimize_every cycles (the least
recently planned first, for CHECK_SECONDS at most; each only when what its nodes write
per cycle moved since it was last planned: records.unchanged), at once when Zhu's
trigger names a query whose joins write far more than when it was planned, and when a
decision that waited for its windows to turn over said (migrations.recheck_at)."""

from __future__ import annotations

import dataclasses
import time

import psycopg

from .. import roles
from ..names import LOCK_CYCLES
from .decide import tried
from . import records
from .records import RECENT, UNKNOWN, Decision

# A periodic check plans queries again for about CHECK_SECONDS at most (at least one
# query a check). A re-plan that took longer than a whole check may (a group of queries
# sharing joins, planned together) and kept the layout is made again only once the
# cycles since took 1 / REPLAN_SHARE times as long, so that it costs them at most that
# share; Zhu's trigger still plans a query at once when its joins drift. Measured, and a
# tighter budget tried and taken back: docs/adapt.md.
CHECK_SECONDS = 2.0
REPLAN_SHARE = 0.05


def reoptimize(conn: psycopg.Connection) -> list[Decision]:
    """The periodic check; it never fails the cycle that ran before it."""
    try:
        return _reoptimize(conn)
    except psycopg.Error as exc:
        return [Decision("", UNKNOWN, False,
                         f"the periodic re-plan failed: {exc}")]


def replan_triggered(conn: psycopg.Connection, costs: dict[str, list[float]]
                     ) -> list[Decision]:
    """Zhu's trigger (argus.replan_triggered named them): the queries whose joins
    write far more per row in than after they were last planned, planned again at
    once; it never fails the cycle that ran before it."""
    try:
        if not _may_replan(conn):
            return []
        out, decided = [], set()
        for name, (now, then) in sorted(costs.items()):
            if name in decided:  # (planned with a query it shares joins with, just now)
                continue
            trigger = ("its windows were turning over when it was last planned"
                       if now is None else f"its joins now write {now:,.0f} rows per 1,000 "
                       f"rows in, {then:,.0f} after it was last planned")
            decision = _timed(conn, name, trigger=trigger)
            out.append(dataclasses.replace(decision, why=f"{trigger}: {decision.why}"))
            decided = _decided_after_the_last_cycle(conn)
        return out
    except psycopg.Error as exc:
        return [Decision("", UNKNOWN, False, f"the triggered re-plan failed: {exc}")]


def _may_replan(conn: psycopg.Connection) -> bool:
    """Only a session that may act as argus's owner plans queries again after its
    cycles (a writer's cycles do not)."""
    try:
        owner = roles.owner_role(conn)
    except psycopg.errors.InsufficientPrivilege:  # (a writer reads no catalog)
        return False
    return owner is None or conn.execute(
        "SELECT pg_has_role(current_user, %s, 'USAGE')", (owner,)).fetchone()[0]


def _reoptimize(conn: psycopg.Connection) -> list[Decision]:
    """The periodic check (settings.reoptimize_every): migrate the queries that gain.
    A query whose migration fails keeps its layout; the others go on. Only queries whose
    nodes took WORTH_MS per cycle or more are planned again (planning one costs tens of
    milliseconds; a node its users share counts for each of them by its share), the
    least recently planned first, for CHECK_SECONDS at most; not one whose last re-plan
    took longer than that and kept its layout until the cycles since paid for it
    (REPLAN_SHARE)."""
    if not _may_replan(conn):
        return []
    # decisions against migrating, older than the cycle log keeps (keep_runs*), go, but
    # each query's last: the least recently planned come first (a query whose every
    # decision went came back first, by name, and later ones never did; a helper)
    conn.execute("""DELETE FROM argus_catalog.migrations m
                     WHERE NOT m.migrated
                       AND m.after_run < (SELECT min(run_id) FROM argus_catalog.runs)
                       AND m.migration_id < (SELECT max(l.migration_id)
                                               FROM argus_catalog.migrations l
                                              WHERE l.query = m.query)""")
    out, started, decided = [], time.perf_counter(), set()
    for (name,) in conn.execute(
            """WITH r AS (SELECT run_id FROM argus_catalog.runs WHERE status = 'ok'
                           ORDER BY run_id DESC LIMIT %s)
               SELECT q.name FROM argus_catalog.queries q
                WHERE q.status = 'ok' AND (
                      SELECT sum((n.ms + coalesce(n.flush_ms, 0))
                                 / (SELECT count(*) FROM argus_catalog.query_nodes o
                                     WHERE o.node_id = qn.node_id))
                        FROM argus_catalog.query_nodes qn
                        JOIN argus_catalog.run_nodes n USING (node_id) JOIN r USING (run_id)
                       WHERE qn.query_id = q.query_id) >= %s * (SELECT count(*) FROM r)
                  AND NOT EXISTS (  -- its last re-plan, long, kept it: not paid for yet
                      SELECT FROM argus_catalog.migrations m
                       WHERE m.migration_id = (SELECT max(l.migration_id)
                                                 FROM argus_catalog.migrations l
                                                WHERE l.query = q.name)
                         AND NOT m.migrated AND m.plan_ms > %s AND m.plan_ms > %s * (
                             SELECT coalesce(sum(extract(epoch FROM c.finished_at
                                                             - c.started_at)), 0) * 1000
                               FROM argus_catalog.runs c
                              WHERE c.run_id > m.after_run AND c.status = 'ok'))
                ORDER BY (SELECT max(m.migration_id) FROM argus_catalog.migrations m
                           WHERE m.query = q.name) NULLS FIRST, q.name""",
            (RECENT, records.WORTH_MS, CHECK_SECONDS * 1000, REPLAN_SHARE)).fetchall():
        if out and time.perf_counter() - started > CHECK_SECONDS:
            break  # the next period goes on from the queries left (least recently first)
        if name in decided:  # (with a query planned before it, in this period)
            continue
        checked = time.perf_counter()
        if (kept := records.unchanged(conn, name)) is not None:
            decision, why = kept
            out.append(Decision(name, UNKNOWN, False, why, migration_id=records.log_migration(
                conn, query=name, migrated=False, why=why, unchanged_since=decision,
                plan_ms=(time.perf_counter() - checked) * 1000)))
            continue
        out.append(_timed(conn, name))
        decided = _decided_after_the_last_cycle(conn)
    return out


def _timed(conn: psycopg.Connection, name: str, **how) -> Decision:
    """The query planned again, and the time it took recorded with each decision it
    logged (a group's, with each member's): from when the cycle lock is free (a
    registration or another session's cycle holding it is not planning; a helper)."""
    with conn.transaction():
        conn.execute(LOCK_CYCLES)
    (last,) = conn.execute(
        "SELECT coalesce(max(migration_id), 0) FROM argus_catalog.migrations").fetchone()
    started = time.perf_counter()
    decision = tried(conn, name, **how)
    conn.execute("UPDATE argus_catalog.migrations SET plan_ms = %s "
                 "WHERE migration_id > %s AND plan_ms IS NULL",
                 ((time.perf_counter() - started) * 1000, last))
    return decision


def _decided_after_the_last_cycle(conn: psycopg.Connection) -> set[str]:
    """The queries planned again since the last cycle: alone, or with those they
    share joins with (argus.adapt.together logs a decision for each)."""
    return {q for (q,) in conn.execute(
        "SELECT query FROM argus_catalog.migrations "
        "WHERE after_run = (SELECT max(run_id) FROM argus_catalog.runs)")}
