"""PostgreSQL's plan of a statement (EXPLAIN's JSON), from which registration takes its
estimates."""

from __future__ import annotations

import psycopg
from psycopg import sql


def on_citus(conn: psycopg.Connection) -> bool:
    """Is Citus loaded in this session (its settings exist)?"""
    (setting,) = conn.execute(
        "SELECT current_setting('citus.enable_local_execution', true)").fetchone()
    return setting is not None


def explain(conn: psycopg.Connection, statement: sql.Composable, citus: bool) -> dict:
    """The top of the statement's plan. On Citus (`citus`: on_citus) with its local
    execution off while it plans: an EXPLAIN planned with it on left a transaction that
    had written to a reference table's copy on the coordinator unable to join that
    table with a table of the coordinator's after ("cannot switch local execution
    status from local execution required to local execution disabled"), as a
    registration's backfills do."""
    explained = sql.SQL("EXPLAIN (FORMAT JSON) {}").format(statement)
    if not citus:
        return conn.execute(explained).fetchone()[0][0]["Plan"]
    (was, _) = conn.execute("SELECT current_setting('citus.enable_local_execution'), "
                            "set_config('citus.enable_local_execution', 'off', true)").fetchone()
    plan = conn.execute(explained).fetchone()[0][0]["Plan"]  # (failing, the caller's
    # savepoint or transaction undoes the setting with the rest)
    conn.execute("SELECT set_config('citus.enable_local_execution', %s, true)", (was,))
    return plan
