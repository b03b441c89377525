"""Moving State (Zhu 2006): a query built again as registration builds it, its views
switched to the new top node, the nodes only it used dropped; JISC leaves its new inner
joins to be completed by the cycles."""

from __future__ import annotations

import json
import time

import psycopg
from psycopg import sql

from .. import roles
from ..errors import MigrationError
from ..frontend.analyze import Analyzed, analyze
from ..frontend.calls import as_registered
from ..mqo.replan import Prediction, Replan, predict
from ..mqo.sharing import Sharing
from ..names import NETWORK_SCHEMA, changes_view
from ..network import Builder, assemble, drop_unused, jisc, load_node
from ..admission import row_bound
from ..answers import (changes_rows, changes_view_sql, drop_kept, kept_tables, output_of,
                       output_check_sql, results_view_sql)
from ..registry import build_top
from ..streams import stream_schemas
from .records import Decision, log_migration, only_used_by, recent_ms

LOCK_TIMEOUT = "1s"  # a migration waits this long for a lock (on a view being read)


def read_for_migration(conn: psycopg.Connection, sql_text: str, canonical: str,
                       schemas: dict | None) -> Analyzed:
    """The query read again (`read_again`); then the session set to build as the owner,
    with a short lock_timeout: a reader's open transaction on its views must not hold
    up the cycles for long."""
    analyzed = read_again(conn, sql_text, canonical, schemas)
    roles.become_owner(conn)  # (on pinned_session's path, decide.migrate's)
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (LOCK_TIMEOUT,))
    return analyzed


def read_again(conn: psycopg.Connection, sql_text: str, canonical: str,
               schemas: dict | None) -> Analyzed:
    """A registered query analyzed again, its calls resolved as at registration
    (`as_registered`): no search path of whoever re-plans it decides them."""
    return analyze(sql_text, stream_schemas(conn), as_registered(schemas, canonical))


def move(conn: psycopg.Connection, name: str, query_id: int, analyzed: Analyzed,
         sharing: Sharing, old_top: int, prediction: Prediction, why: str, log: dict,
         replan: Replan | None, evaluate: str, strategy: str) -> Decision:
    """Moving State: the new layout built, the views switched, the old nodes dropped,
    in a subtransaction that leaves the old layout whole if anything fails. JISC: the
    same, but its new inner joins are left to be completed key by key as the cycles
    probe them (argus.network.jisc) — all but the one holding the answer, copied."""
    started = time.perf_counter()
    try:
        with conn.transaction():
            builder, top, output = build(conn, name, analyzed, sharing, replan, evaluate,
                                          lazily=strategy == "jisc")
            log["lazy_nodes"] = jisc.settle(builder)
            if top.id == old_top:
                raise psycopg.Rollback()
            migration_id = log_migration(conn, migrated=True, why=why,
                                         old_ms=recent_ms(conn, set(log["old_nodes"])), **log)
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
                        log_migration(conn, migrated=False, why=why, **log))
    build_ms = (time.perf_counter() - started) * 1000
    if replan is None:  # a switch of evaluation: no join order predicted
        conn.execute("UPDATE argus_catalog.migrations SET build_ms = %s, new_nodes = %s "
                     "WHERE migration_id = %s",
                     (build_ms, sorted(only_used_by(conn, [query_id])), migration_id))
        return Decision(name, prediction, True, why, log["forced"], build_ms, migration_id)
    applied = predict(replan.choices)  # (forced: not the cheapest)
    conn.execute(
        """UPDATE argus_catalog.migrations SET build_ms = %s, new_nodes = %s,
                  predicted_new = %s, build_rows = %s, old_trees = %s, new_trees = %s
            WHERE migration_id = %s""",
        (build_ms, sorted(only_used_by(conn, [query_id])), applied.best, applied.build,
         [t[0] for t in applied.trees], [t[1] for t in applied.trees], migration_id))
    return Decision(name, applied, True, why, log["forced"], build_ms, migration_id)


def build(conn: psycopg.Connection, name: str, analyzed: Analyzed, sharing: Sharing,
          replan: Replan | None, evaluate: str, lazily: bool = False,
          predicting: dict | None = None):
    """The query built again as registration built it (its sharing too), its joins
    chosen by `replan` (`lazily`: new joins left to complete, network.jisc;
    `predicting`: to be rolled back, its new nodes filled only if read — the fills
    waiting, which the builds of one transaction share: network.reads): the builder,
    the top node and the output expressions over it."""
    builder = Builder(conn, sharing, query=name)
    builder.replan = replan
    builder.lazy = lazily
    if predicting is not None:
        builder.predicting, builder.unfilled = True, predicting
    builder.row_bound = row_bound(conn)
    top, output = build_top(builder, name, analyzed, evaluate)
    return builder, top, output


def _kept(conn: psycopg.Connection, name: str, query_id: int, migration_id: int
          ) -> sql.Identifier:
    """The last cycle's changes in a table of their own, as the changes view shows them
    before making them net (each read of the view makes them net: copying the view
    would net them twice; 0.64 s of a 2.6 s move on drift_shared): read through the old
    top node and output since the run the catalog says; else through the view — of a
    query registered before it said, or whose output reads the clock (its changes read
    the old top's history, whose name a new node may have taken: Apply._take_over; the
    view reads the table itself)."""
    kept = sql.Identifier(NETWORK_SCHEMA, f"q{query_id}_kept_{migration_id}")
    old_top, after, clocked = conn.execute(
        "SELECT output_node, changes_after, clock_output FROM argus_catalog.queries "
        "WHERE query_id = %s", (query_id,)).fetchone()
    if after is None or clocked:
        rows = sql.SQL("SELECT * FROM {}").format(changes_view(name))
    else:
        output = output_of(conn, query_id)
        older = kept_tables(conn, query_id)  # (a migration since the last cycle: one)
        rows = changes_rows(output, load_node(conn, old_top), after,
                            older[0] if older else None)
    conn.execute(sql.SQL("CREATE TABLE {} AS {}").format(kept, rows))
    return kept


def _switch(conn: psycopg.Connection, name: str, query_id: int, builder: Builder, top,
            output: list[str], last_run: int, migration_id: int, evaluate: str) -> None:
    """Point the query's views and catalog rows at its new top node; keep the last
    cycle's changes for the changes view until the next cycle."""
    kept = _kept(conn, name, query_id, migration_id)
    conn.execute(results_view_sql(conn, name, output, top))
    conn.execute(changes_view_sql(conn, name, output, top, last_run, kept))
    drop_kept(conn, query_id, but=kept)
    orders = json.dumps(builder.join_orders) if builder.join_orders else None
    conn.execute("UPDATE argus_catalog.queries SET output_node = %s, join_orders = %s, "
                 "evaluate = %s, output_check = %s, changes_after = %s WHERE query_id = %s",
                 (top.id, orders, evaluate, output_check_sql(output, top, builder.row_bound),
                  last_run, query_id))
    for position, expr in enumerate(output, 1):
        conn.execute("UPDATE argus_catalog.query_columns SET expr = %s "
                     "WHERE query_id = %s AND position = %s", (expr, query_id, position))
    conn.execute("DELETE FROM argus_catalog.query_nodes WHERE query_id = %s", (query_id,))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO argus_catalog.query_nodes VALUES (%s, %s)",
                        [(query_id, n) for n, _ in builder.ancestors(top.id)])
