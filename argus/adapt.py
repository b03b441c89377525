"""Adapting at run time (issue 21): plan a registered query's joins again on what the
cycles observed, and migrate the live network to the new layout.

Moving State (Zhu 2006), between two cycles, in one transaction holding the cycle
lock: the query is built again as registration builds it — its new nodes filled from
the states that exist (its parents' histories, shared nodes) — its views are switched
to the new top node, and the nodes only it used are dropped. Nodes other queries use
are untouched. The last cycle's changes, which the replaced nodes held, are kept in a
table the changes view reads until the next cycle, so that answers and changes are
exact throughout. A failed migration rolls back whole: the old layout keeps working.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass

import psycopg
import sqlglot
from psycopg import sql

from . import roles
from .settings import pinned_session
from .errors import MigrationError, QueryError, UnknownQueryError
from .frontend.analyze import Analyzed, analyze, as_registered
from .frontend.temporal import calls_user_clock
from .mqo.replan import Prediction, Replan, decide, evaluation, predict
from .mqo.sharing import Sharing
from .nodes import JOINS, LOADED
from .names import (CYCLE_LOCK, MIGRATING, NETWORK_SCHEMA, changes_view, check_name)
from .network import Builder, assemble, drop_unused, jisc, rebuild_if_lost
from .registry import (EVALUATIONS, build_top, changes_view_sql, drop_kept, results_view_sql,
                       output_check_sql, over_histories, row_bound)
from .streams import stream_schemas
from .trees import DIALECT

RECENT = 10  # the cycles whose timings say what the old nodes cost
WORTH_MS = 1.0  # a query whose own nodes took less per cycle has nothing to gain
LOCK_TIMEOUT = "1s"  # a migration waits this long for a lock (on a view being read)
UNKNOWN = Prediction(None, 0.0, 0.0, [])  # a query that could not be planned again
CHECK_SECONDS = 2.0  # a periodic check plans queries again for about this long at most


@dataclass(frozen=True)
class Decision:
    query: str
    prediction: Prediction
    migrated: bool  # (a dry run: would be)
    why: str
    forced: bool = False
    build_ms: float | None = None
    migration_id: int | None = None


def optimize(conn: psycopg.Connection, names: list[str] | None = None, *,
             force: bool = False, apply: bool = True,
             evaluate: str | None = None) -> list[Decision]:
    """Decide (and, with `apply`, migrate) each query, or `names` (raising for the
    first that cannot be); `force`: migrate to the cheapest other layout whatever it
    saves; `evaluate`: switch the queries to that evaluation ('incremental', 'rerun')."""
    if names is not None:
        return [migrate(conn, name, force=force, apply=apply, evaluate=evaluate)
                for name in names]
    return [_tried(conn, name, force=force, apply=apply, evaluate=evaluate)
            for (name,) in conn.execute(
                "SELECT name FROM argus_catalog.queries WHERE status = 'ok' ORDER BY name"
            ).fetchall()]


def _tried(conn: psycopg.Connection, name: str, **how) -> Decision:
    """One query of many: its failure is its decision, logged (its own work was rolled
    back) unless it was a dry run, and the others go on."""
    try:
        return migrate(conn, name, **how)
    except (psycopg.Error, QueryError, MigrationError) as exc:
        logged = None
        if how.get("apply", True) and not conn.closed:
            strategy, last_run = conn.execute(
                "SELECT migration, (SELECT coalesce(max(run_id), 0) FROM argus_catalog.runs) "
                "FROM argus_catalog.settings").fetchone()
            logged = _log(conn, query=name, strategy=strategy, migrated=False, after_run=last_run,
                          forced=bool(how.get("force")), why=f"failed: {exc}",
                          triggered=how.get("trigger"))
        return Decision(name, UNKNOWN, False, str(exc), migration_id=logged)


def migrate(conn: psycopg.Connection, name: str, *, force: bool = False,
            apply: bool = True, evaluate: str | None = None,
            trigger: str | None = None) -> Decision:
    """Decide, and migrate: to `evaluate` when given; else, when settings.rerun_fallback
    is on, between incremental and re-running by their costs (`_switch_to`); else (or
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
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", CYCLE_LOCK)
        q = _query(conn, name)
        switch = _switch_to(conn, name, q.query_id, q.current, evaluate, q.fallback,
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
           "old_nodes": sorted(_only_used_by(conn, [q.query_id])),
           "old_evaluate": q.current, "new_evaluate": target}
    if target == q.current:
        if not apply:
            return Decision(q.name, UNKNOWN, False, why, forced)
        return Decision(q.name, UNKNOWN, False, why, forced, None,
                        _log(conn, migrated=False, why=why, **log))
    analyzed = _analyzed(conn, q.sql_text, q.canonical, q.schemas)
    if not apply:
        return Decision(q.name, UNKNOWN, True, why, forced)
    return _move(conn, q.name, q.query_id, analyzed, q.sharing, q.old_top, UNKNOWN, why, log,
                 None, target, q.strategy)


def _joins(conn: psycopg.Connection, q: _Query, force: bool, apply: bool,
           trigger: str | None) -> Decision:
    """The query's joins planned again (a prediction, nothing kept), and moved to the
    best tree when it gains enough; with the queries it shares nodes with when it alone
    would not."""
    analyzed = _analyzed(conn, q.sql_text, q.canonical, q.schemas)
    mine = _only_used_by(conn, [q.query_id])
    uses = frozenset(r[0] for r in conn.execute(
        "SELECT node_id FROM argus_catalog.query_nodes WHERE query_id = %s", (q.query_id,)))
    replan = Replan(frozenset(mine), uses, growth=q.growth)
    with conn.transaction(force_rollback=True):  # a prediction: nothing is kept
        _build(conn, q.name, analyzed, q.sharing, replan, q.current)
    prediction = predict(replan.choices)
    go, why = decide(prediction, q.min_gain, q.horizon)
    if force and prediction.current is not None:
        go, why = True, f"forced ({why})"
    log = {"query": q.name, "after_run": q.last_run, "strategy": q.strategy, "forced": force,
           "triggered": trigger, "predicted_old": prediction.current,
           "predicted_new": prediction.best,
           "build_rows": prediction.build, "old_nodes": sorted(mine),
           "old_trees": [t[0] for t in prediction.trees],
           "new_trees": [t[1] for t in prediction.trees]}
    if not go and not force:
        members = _sharers(conn, q.query_id)
        if len(members) > 1:
            return _together(conn, members, analyzed, apply, trigger,
                             (q.last_run, q.strategy, q.min_gain, q.horizon, q.growth))
    if not apply:
        return Decision(q.name, prediction, go, why, force)
    if not go:
        return Decision(q.name, prediction, False, why, force, None,
                        _log(conn, migrated=False, why=why, **log))
    return _move(conn, q.name, q.query_id, analyzed, q.sharing, q.old_top, prediction, why,
                 log, Replan(frozenset(mine), uses, "other" if force else "best", q.growth),
                 q.current, q.strategy)


@dataclass(frozen=True)
class _Member:
    """A query planned again with others that share its joins."""

    name: str
    query_id: int
    sql: str
    canonical: str
    schemas: dict | None
    old_top: int
    sharing: Sharing
    uses: frozenset[int]


def _sharers(conn: psycopg.Connection, query_id: int) -> list[_Member]:
    """This query, then the incremental, running ones sharing a join node with it."""
    return [_Member(name, qid, text, canonical, schemas, top,
                    Sharing(shared_as, join_sharing=joins), frozenset(uses))
            for name, qid, text, canonical, schemas, top, shared_as, joins, uses in conn.execute(
                """SELECT q.name, q.query_id, q.sql, q.canonical, q.functions, q.output_node,
                          q.sharing, q.join_sharing,
                          ARRAY(SELECT u.node_id FROM argus_catalog.query_nodes u
                                 WHERE u.query_id = q.query_id)
                     FROM argus_catalog.queries q
                    WHERE q.status = 'ok' AND q.evaluate = 'incremental'
                      AND q.join_orders IS NOT NULL
                      AND (q.query_id = %(q)s OR EXISTS (
                          SELECT FROM argus_catalog.query_nodes mine
                            JOIN argus_catalog.nodes n
                                 ON n.node_id = mine.node_id AND n.kind = ANY(%(joins)s)
                            JOIN argus_catalog.query_nodes o ON o.node_id = mine.node_id
                           WHERE mine.query_id = %(q)s AND o.query_id = q.query_id))
                    ORDER BY q.query_id <> %(q)s, q.name""",
                {"q": query_id, "joins": JOINS})]


def _together(conn: psycopg.Connection, members: list[_Member], analyzed: Analyzed,
              apply: bool, trigger: str | None, settings: tuple) -> Decision:
    """Queries sharing joins, planned again as one: a join they share is free to each
    alone (its upkeep serves the others), so none leaves it however costly it became.
    Priced for all of them — each node they alone use paid once, by the first that
    builds it; the others reuse it for free — they migrate together (in this
    transaction: all or none), or those whose best trees differ part, the node staying
    with the queries that still want it."""
    last_run, strategy, min_gain, horizon, growth = settings
    first = members[0]
    hidden = _only_used_by(conn, [m.query_id for m in members])
    texts = {first.name: analyzed} | {m.name: _read_again(conn, m.sql, m.canonical, m.schemas)
                                      for m in members[1:]}
    kept, best = _priced(conn, members, texts, hidden, growth)
    known = all(p.current is not None for p in kept.values())
    total = Prediction(sum(p.current for p in kept.values()) if known else None,
                       sum(p.best for p in best.values()), sum(p.build for p in best.values()),
                       [t for p in best.values() for t in p.trees])
    go, reason = decide(total, min_gain, horizon)

    def why(m: _Member) -> str:
        others = ", ".join(o.name for o in members if o != m)
        return f"together with {others}, which share its joins: {reason}"

    log = {"after_run": last_run, "strategy": strategy, "forced": False, "triggered": trigger}
    decision = Decision(first.name, total, go, why(first))
    if not apply:
        return decision
    if not go:
        return dataclasses.replace(decision, migration_id=_log(
            conn, query=first.name, migrated=False, why=why(first), **log,
            **_predicted(kept, best, first), old_nodes=sorted(hidden & first.uses)))
    fresh, decision = set(), dataclasses.replace(decision, migrated=False)  # (its trees stay)
    for m in members:
        if not best[m.name].trees:  # its trees stay: it keeps its nodes, for the others too
            fresh |= m.uses & hidden
            continue
        moved = _move(conn, m.name, m.query_id, texts[m.name], m.sharing, m.old_top,
                      best[m.name], why(m), {"query": m.name, **log, **_predicted(kept, best, m),
                                             "old_nodes": sorted(hidden & m.uses)},
                      Replan(hidden, m.uses, "best", growth, frozenset(fresh)), "incremental",
                      strategy)
        decision = moved if m == first else decision
        fresh |= {n for (n,) in conn.execute("SELECT node_id FROM argus_catalog.query_nodes "
                                             "WHERE query_id = %s", (m.query_id,))} - m.uses
    return decision


def _priced(conn: psycopg.Connection, members: list[_Member], texts: dict[str, Analyzed],
            hidden: frozenset[int], growth: float | None
            ) -> tuple[dict[str, Prediction], dict[str, Prediction]]:
    """Each member's prediction for the layout they have (each node paid by its first
    user) and for the best one (each new node paid by its first builder), both built
    and rolled back."""
    kept, best = {}, {}
    with conn.transaction(force_rollback=True):
        paid: set[int] = set()
        for m in members:
            replan = Replan(hidden - paid, m.uses, "keep", growth)
            _build(conn, m.name, texts[m.name], m.sharing, replan, "incremental")
            kept[m.name], paid = predict(replan.choices), paid | (m.uses & hidden)
    with conn.transaction(force_rollback=True):
        fresh: set[int] = set()
        for m in members:
            replan = Replan(hidden, m.uses, "best", growth, frozenset(fresh))
            builder, top, _ = _build(conn, m.name, texts[m.name], m.sharing, replan,
                                     "incremental")
            best[m.name] = predict(replan.choices)
            built = {n for n, _ in builder.ancestors(top.id)} - m.uses
            conn.execute("INSERT INTO argus_catalog.query_nodes SELECT %s, unnest(%s::bigint[])",
                         (m.query_id, sorted(built)))  # (in use: the next one finds them)
            fresh |= built
    return kept, best


def _predicted(kept: dict[str, Prediction], best: dict[str, Prediction], m: _Member) -> dict:
    mine = best[m.name]
    return {"predicted_old": kept[m.name].current, "predicted_new": mine.best,
            "build_rows": mine.build, "old_trees": [t[0] for t in mine.trees],
            "new_trees": [t[1] for t in mine.trees]}


def _analyzed(conn: psycopg.Connection, sql_text: str, canonical: str,
              schemas: dict | None) -> Analyzed:
    """The query read again (`_read_again`); then the session set to build as the owner,
    with a short lock_timeout: a reader's open transaction on its views must not hold
    up the cycles for long."""
    analyzed = _read_again(conn, sql_text, canonical, schemas)
    roles.become_owner(conn)
    conn.execute("SET LOCAL search_path = pg_catalog, pg_temp")
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (LOCK_TIMEOUT,))
    return analyzed


def _read_again(conn: psycopg.Connection, sql_text: str, canonical: str,
                schemas: dict | None) -> Analyzed:
    """A registered query analyzed again, its calls resolved as at registration
    (`as_registered`): no search path of whoever re-plans it decides them."""
    return analyze(sql_text, stream_schemas(conn), as_registered(schemas, canonical))


def _move(conn: psycopg.Connection, name: str, query_id: int, analyzed: Analyzed,
          sharing: Sharing, old_top: int, prediction: Prediction, why: str, log: dict,
          replan: Replan | None, evaluate: str, strategy: str) -> Decision:
    """Moving State: the new layout built, the views switched, the old nodes dropped,
    in a subtransaction that leaves the old layout whole if anything fails. JISC: the
    same, but its new inner joins are left to be completed key by key as the cycles
    probe them (argus.network.jisc) — all but the one holding the answer, copied."""
    started = time.perf_counter()
    try:
        with conn.transaction():
            builder, top, output = _build(conn, name, analyzed, sharing, replan, evaluate,
                                          lazily=strategy == "jisc")
            log["lazy_nodes"] = jisc.settle(builder)
            if top.id == old_top:
                raise psycopg.Rollback()
            migration_id = _log(conn, migrated=True, why=why,
                                old_ms=_recent_ms(conn, set(log["old_nodes"])), **log)
            _switch(conn, name, query_id, builder, top, output, log["after_run"],
                    migration_id, evaluate)
            drop_unused(conn)
            assemble(conn, check=builder.compiled)
    except psycopg.Error as exc:
        raise MigrationError(f"query {name!r} could not be migrated and keeps its layout: "
                             f"{exc.diag.message_primary or exc}") from exc
    if top.id == old_top:
        why = "the new plan is the layout it has"
        return Decision(name, prediction, False, why, log["forced"], None,
                        _log(conn, migrated=False, why=why, **log))
    build_ms = (time.perf_counter() - started) * 1000
    if replan is None:  # a switch of evaluation: no join order predicted
        conn.execute("UPDATE argus_catalog.migrations SET build_ms = %s, new_nodes = %s "
                     "WHERE migration_id = %s",
                     (build_ms, sorted(_only_used_by(conn, [query_id])), migration_id))
        return Decision(name, prediction, True, why, log["forced"], build_ms, migration_id)
    applied = predict(replan.choices)  # (forced: not the cheapest)
    conn.execute(
        """UPDATE argus_catalog.migrations SET build_ms = %s, new_nodes = %s,
                  predicted_new = %s, build_rows = %s, old_trees = %s, new_trees = %s
            WHERE migration_id = %s""",
        (build_ms, sorted(_only_used_by(conn, [query_id])), applied.best, applied.build,
         [t[0] for t in applied.trees], [t[1] for t in applied.trees], migration_id))
    return Decision(name, applied, True, why, log["forced"], build_ms, migration_id)


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
        out = []
        for name, (now, then) in sorted(costs.items()):
            trigger = (f"its joins now write {now:,.0f} rows per 1,000 rows in, "
                       f"{then:,.0f} after it was last planned")
            decision = _tried(conn, name, trigger=trigger)
            out.append(dataclasses.replace(decision, why=f"{trigger}: {decision.why}"))
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
    least recently planned first, for CHECK_SECONDS at most."""
    if not _may_replan(conn):
        return []
    # decisions against migrating, older than the cycle log keeps (keep_runs*), go
    conn.execute("DELETE FROM argus_catalog.migrations WHERE NOT migrated "
                 "AND after_run < (SELECT min(run_id) FROM argus_catalog.runs)")
    out, started, moved = [], time.perf_counter(), set()
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
                ORDER BY (SELECT max(m.migration_id) FROM argus_catalog.migrations m
                           WHERE m.query = q.name) NULLS FIRST, q.name""",
            (RECENT, WORTH_MS)).fetchall():
        if out and time.perf_counter() - started > CHECK_SECONDS:
            break  # the next period goes on from the queries left (least recently first)
        if name in moved:  # (with a query planned before it, in this period)
            continue
        out.append(_tried(conn, name))
        if out[-1].migrated:
            moved = _migrated_after_the_last_cycle(conn)
    return out


def _migrated_after_the_last_cycle(conn: psycopg.Connection) -> set[str]:
    return {q for (q,) in conn.execute(
        "SELECT query FROM argus_catalog.migrations WHERE migrated "
        "AND after_run = (SELECT max(run_id) FROM argus_catalog.runs)")}


RERUN_OVERHEAD = 1.5  # a re-run node's cycle: the query, then its difference from the answer


def _switch_to(conn: psycopg.Connection, name: str, query_id: int, current: str,
               evaluate: str | None, fallback: bool, min_gain: float
               ) -> tuple[str, str] | None:
    """The evaluation a query should have and why, or None to plan its joins again.
    Asked for (`evaluate`), it is pinned: the fallback leaves it alone after. Else, with
    the fallback on, its own nodes' time per cycle over the last cycles against
    re-running it once now, timed, times RERUN_OVERHEAD (argus.mqo.replan.evaluation).
    A query registered to be re-run stays so."""
    if evaluate is not None:
        if evaluate == current:
            return current, f"it is evaluated {_how(current)} already"
        return evaluate, f"asked to be evaluated {_how(evaluate)}"
    if not fallback or conn.execute(
            "SELECT forced FROM argus_catalog.migrations WHERE query = %s AND migrated "
            "AND new_evaluate IS NOT NULL ORDER BY migration_id DESC LIMIT 1",
            (name,)).fetchone() == (True,):
        return None
    own = _recent_ms(conn, _only_used_by(conn, [query_id]))
    if own is None or own < WORTH_MS:
        return None
    if current == "incremental":
        (canonical,) = conn.execute("SELECT canonical FROM argus_catalog.queries "
                                    "WHERE query_id = %s", (query_id,)).fetchone()
        if calls_user_clock(sqlglot.parse_one(canonical, read=DIALECT)):
            return None  # (it cannot be re-run: build_top; its joins are planned again)
        # a re-run slower than the break-even is cut short there: a check never takes
        # longer than the query's own nodes take in one cycle
        rerun = _rerun_ms(conn, canonical, own * (1 - min_gain) / RERUN_OVERHEAD)
        return evaluation(current, own, None if rerun is None else rerun * RERUN_OVERHEAD,
                          None, min_gain)
    row = conn.execute(  # its nodes' time before the fallback made it re-run
        "SELECT old_ms FROM argus_catalog.migrations WHERE query = %s AND migrated "
        "AND new_evaluate = 'rerun' ORDER BY migration_id DESC LIMIT 1", (name,)).fetchone()
    return evaluation(current, own, None, row and row[0], min_gain)


def _how(evaluate: str) -> str:
    return "by re-running it" if evaluate == "rerun" else "incrementally"


def _rerun_ms(conn: psycopg.Connection, canonical: str, limit_ms: float) -> float | None:
    """The query run once over the stream histories, now: milliseconds; None if it ran
    past `limit_ms` (cancelled there)."""
    (previous,) = conn.execute("SELECT current_setting('statement_timeout')").fetchone()
    started = time.perf_counter()
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('statement_timeout', %s, true)",
                         (f"{max(1, min(int(limit_ms), 2_000_000_000))}ms",))
            conn.execute(sql.SQL("SELECT count(*) FROM ({}) AS argus_q").format(
                sql.SQL(over_histories(canonical))))
            conn.execute("SELECT set_config('statement_timeout', %s, true)", (previous,))
    except psycopg.errors.QueryCanceled:
        return None
    return (time.perf_counter() - started) * 1000


def _only_used_by(conn: psycopg.Connection, queries: list[int]) -> frozenset[int]:
    """The nodes (not streams) only these queries use: of one, its own nodes."""
    return frozenset(r[0] for r in conn.execute(
        """SELECT DISTINCT q.node_id FROM argus_catalog.query_nodes q
             JOIN argus_catalog.nodes n USING (node_id)
            WHERE q.query_id = ANY(%(q)s) AND n.kind <> ALL(%(loaded)s)
              AND NOT EXISTS (SELECT FROM argus_catalog.query_nodes o
                               WHERE o.node_id = q.node_id AND o.query_id <> ALL(%(q)s))""",
        {"q": queries, "loaded": LOADED}))


def _build(conn: psycopg.Connection, name: str, analyzed: Analyzed, sharing: Sharing,
           replan: Replan | None, evaluate: str, lazily: bool = False):
    """The query built again as registration built it (its sharing too), its joins
    chosen by `replan` (`lazily`: new joins left to complete, network.jisc): the
    builder, the top node and the output expressions over it."""
    builder = Builder(conn, sharing, query=name)
    builder.replan = replan
    builder.lazy = lazily
    builder.row_bound = row_bound(conn)
    top, output = build_top(builder, name, analyzed, evaluate)
    return builder, top, output


def _switch(conn: psycopg.Connection, name: str, query_id: int, builder: Builder, top,
            output: list[str], last_run: int, migration_id: int, evaluate: str) -> None:
    """Point the query's views and catalog rows at its new top node; keep the last
    cycle's changes for the changes view until the next cycle."""
    kept = sql.Identifier(NETWORK_SCHEMA, f"q{query_id}_kept_{migration_id}")
    conn.execute(sql.SQL("CREATE TABLE {} AS SELECT * FROM {}").format(
        kept, changes_view(name)))
    conn.execute(results_view_sql(conn, name, output, top))
    conn.execute(changes_view_sql(name, output, top, last_run, kept))
    drop_kept(conn, query_id, but=kept)
    orders = json.dumps(builder.join_orders) if builder.join_orders else None
    conn.execute("UPDATE argus_catalog.queries SET output_node = %s, join_orders = %s, "
                 "evaluate = %s, output_check = %s WHERE query_id = %s",
                 (top.id, orders, evaluate, output_check_sql(output, top, builder.row_bound),
                  query_id))
    for position, expr in enumerate(output, 1):
        conn.execute("UPDATE argus_catalog.query_columns SET expr = %s "
                     "WHERE query_id = %s AND position = %s", (expr, query_id, position))
    conn.execute("DELETE FROM argus_catalog.query_nodes WHERE query_id = %s", (query_id,))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO argus_catalog.query_nodes VALUES (%s, %s)",
                        [(query_id, n) for n, _ in builder.ancestors(top.id)])


def _recent_ms(conn: psycopg.Connection, nodes: set[int]) -> float | None:
    """The nodes' time per cycle over the last RECENT cycles (None: no cycle)."""
    (ms,) = conn.execute(
        """WITH r AS (SELECT run_id FROM argus_catalog.runs WHERE status = 'ok'
                       ORDER BY run_id DESC LIMIT %s)
           SELECT (SELECT coalesce(sum(n.ms + coalesce(n.flush_ms, 0)), 0)
                     FROM argus_catalog.run_nodes n JOIN r USING (run_id)
                    WHERE n.node_id = ANY(%s)) / nullif((SELECT count(*) FROM r), 0)""",
        (RECENT, sorted(nodes))).fetchone()
    return ms


def _log(conn: psycopg.Connection, **row) -> int:
    columns = list(row)
    (migration_id,) = conn.execute(sql.SQL(
        "INSERT INTO argus_catalog.migrations ({}) VALUES ({}) RETURNING migration_id").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(sql.Placeholder() * len(columns))), list(row.values())).fetchone()
    return migration_id
