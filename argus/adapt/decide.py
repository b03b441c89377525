"""Deciding, query by query: its evaluation (incremental or re-run), else its joins
planned again on what the cycles observed, and the move when it gains enough."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ..errors import ArgusError, QueryError, UnknownQueryError
from ..mqo.replan import Replan, decide, predict
from ..mqo.sharing import Sharing
from ..names import LOCK_CYCLES, MIGRATING, check_name
from ..network import rebuild_if_lost
from ..registry import EVALUATIONS
from ..settings import pinned_session
from .fallback import switch_to
from .move import build, move, read_for_migration
from .records import UNKNOWN, Decision, log_migration, only_used_by, recheck
from .together import planned_together, sharers


def optimize(conn: psycopg.Connection, names: list[str] | None = None, *,
             force: bool = False, apply: bool = True,
             evaluate: str | None = None) -> list[Decision]:
    """Decide (and, with `apply`, migrate) each query, or `names` (raising for the
    first that cannot be); `force`: migrate to the cheapest other layout whatever it
    saves; `evaluate`: switch the queries to that evaluation ('incremental', 'rerun')."""
    if names is not None:
        return [migrate(conn, name, force=force, apply=apply, evaluate=evaluate)
                for name in names]
    return [tried(conn, name, force=force, apply=apply, evaluate=evaluate)
            for (name,) in conn.execute(
                "SELECT name FROM argus_catalog.queries WHERE status = 'ok' ORDER BY name"
            ).fetchall()]


def tried(conn: psycopg.Connection, name: str, **how) -> Decision:
    """One query of many: its failure is its decision, logged (its own work was rolled
    back) unless it was a dry run, and the others go on."""
    try:
        return migrate(conn, name, **how)
    except (psycopg.Error, ArgusError) as exc:  # (a query dropped since: UnknownQueryError)
        logged = None
        if how.get("apply", True) and not conn.closed:
            logged = log_migration(conn, query=name, migrated=False,
                                   forced=bool(how.get("force")),
                                   why=f"failed: {exc}", triggered=how.get("trigger"))
        return Decision(name, UNKNOWN, False, str(exc), migration_id=logged)


def migrate(conn: psycopg.Connection, name: str, *, force: bool = False,
            apply: bool = True, evaluate: str | None = None,
            trigger: str | None = None) -> Decision:
    """Decide, and migrate: to `evaluate` when given; else, when settings.rerun_fallback
    is on, between incremental and re-running by their costs (`switch_to`); else (or
    when that keeps the evaluation) to the query's joins planned again. `trigger`: why
    Zhu's trigger asked for it (logged with the decision)."""
    name = check_name(name, "query")
    if evaluate is not None and evaluate not in EVALUATIONS:
        raise QueryError(f"evaluate must be one of {', '.join(EVALUATIONS)}, "
                         f"not {evaluate!r}")
    rebuild_if_lost(conn)  # (new nodes are filled from the states that exist)
    with conn.transaction(), pinned_session(conn):
        # for argus status, while it lasts (the transaction's setting)
        conn.execute("SELECT set_config('application_name', %s, true)",
                     (f"{MIGRATING}{name}"[:63],))
        conn.execute(LOCK_CYCLES)
        q = _query(conn, name)
        switch = switch_to(conn, name, q.query_id, q.current, evaluate, q.fallback,
                            q.min_gain)
        if switch is not None:
            return _evaluation(conn, q, switch, evaluate is not None, apply, trigger)
        if q.current == "rerun" or not q.joins:
            why = ("evaluated by re-running it: no joins to order" if q.current == "rerun"
                   else "no joins to order")
            return Decision(name, UNKNOWN, False, why)
        if q.layout != "cost":
            raise QueryError("queries are planned again by cost: layout is "
                             f"{q.layout!r} (argus config layout cost)")
        return _joins(conn, q, force, apply, trigger)


@dataclass(frozen=True)
class _Query:
    """A registered query as a migration reads it, with the settings it follows."""

    name: str
    query_id: int
    sql_text: str
    canonical: str
    schemas: dict | None
    old_top: int
    sharing: Sharing
    current: str  # its evaluation: incremental or rerun
    joins: bool  # its blocks were ordered by cost (it has joins to order)
    layout: str
    strategy: str
    min_gain: float
    horizon: int
    growth: float | None
    fallback: bool
    last_run: int


def _query(conn: psycopg.Connection, name: str) -> _Query:
    row = conn.execute("SELECT query_id, sql, canonical, functions, output_node, status, "
                       "sharing, join_sharing, evaluate, join_orders IS NOT NULL "
                       "FROM argus_catalog.queries WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise UnknownQueryError(f"unknown query {name!r}")
    (query_id, sql_text, canonical, schemas, old_top, status, shared_as, join_sharing,
     current, joins) = row
    if status != "ok":
        raise QueryError(f"query {name!r} failed and is isolated: it is not migrated "
                         f"until it runs again (argus retry {name})")
    return _Query(name, query_id, sql_text, canonical, schemas, old_top,
                  Sharing(shared_as, join_sharing=join_sharing), current, joins,
                  *conn.execute(
                      "SELECT layout, migration, migration_min_gain, migration_horizon, "
                      "virtual_join_growth, rerun_fallback, "
                      "(SELECT coalesce(max(run_id), 0) FROM argus_catalog.runs) "
                      "FROM argus_catalog.settings").fetchone())


def _evaluation(conn: psycopg.Connection, q: _Query, switch: tuple[str, str], forced: bool,
                apply: bool, trigger: str | None) -> Decision:
    """Between incremental and re-running: keep the query's evaluation, or move it."""
    target, why = switch
    log = {"query": q.name, "after_run": q.last_run, "strategy": q.strategy,
           "forced": forced, "triggered": trigger,
           "old_nodes": sorted(only_used_by(conn, [q.query_id])),
           "old_evaluate": q.current, "new_evaluate": target}
    if target == q.current:
        if not apply:
            return Decision(q.name, UNKNOWN, False, why, forced)
        return Decision(q.name, UNKNOWN, False, why, forced, None,
                        log_migration(conn, migrated=False, why=why, **log))
    analyzed = read_for_migration(conn, q.sql_text, q.canonical, q.schemas)
    if not apply:
        return Decision(q.name, UNKNOWN, True, why, forced)
    return move(conn, q.name, q.query_id, analyzed, q.sharing, q.old_top, UNKNOWN, why, log,
                None, target, q.strategy)


def _joins(conn: psycopg.Connection, q: _Query, force: bool, apply: bool,
           trigger: str | None) -> Decision:
    """The query's joins planned again (a prediction, nothing kept), and moved to the
    best tree when it gains enough; with the queries it shares nodes with when it alone
    would not."""
    analyzed = read_for_migration(conn, q.sql_text, q.canonical, q.schemas)
    mine = only_used_by(conn, [q.query_id])
    uses = frozenset(r[0] for r in conn.execute(
        "SELECT node_id FROM argus_catalog.query_nodes WHERE query_id = %s", (q.query_id,)))
    replan = Replan(frozenset(mine), uses, growth=q.growth)
    with conn.transaction(force_rollback=True):  # a prediction: nothing is kept
        build(conn, q.name, analyzed, q.sharing, replan, q.current, predicting={})
    prediction = predict(replan.choices)
    go, why, wait = decide(prediction, q.min_gain, q.horizon)
    if force and prediction.current is not None:
        go, why, wait = True, f"forced ({why})", False
    if not go and not force:
        members = sharers(conn, q.query_id)
        if len(members) > 1:
            return planned_together(conn, members, analyzed, apply, trigger,
                                    (q.last_run, q.strategy, q.min_gain, q.horizon, q.growth))
    waiting, then = recheck(conn, q.name, wait and apply, q.last_run)
    why += then
    log = {"query": q.name, "after_run": q.last_run, "strategy": q.strategy, "forced": force,
           "triggered": trigger, "predicted_old": prediction.current,
           "predicted_new": prediction.best,
           "build_rows": prediction.build, "old_nodes": sorted(mine),
           "old_trees": [t[0] for t in prediction.trees],
           "new_trees": [t[1] for t in prediction.trees], **waiting}
    if not apply:
        return Decision(q.name, prediction, go, why, force)
    if not go:
        return Decision(q.name, prediction, False, why, force, None,
                        log_migration(conn, migrated=False, why=why, **log))
    return move(conn, q.name, q.query_id, analyzed, q.sharing, q.old_top, prediction, why,
                log, Replan(frozenset(mine), uses, "other" if force else "best", q.growth),
                q.current, q.strategy)
