"""PostgreSQL's plan of a statement (EXPLAIN's JSON), from which registration takes its
estimates."""

from __future__ import annotations

import psycopg
from psycopg import sql


def explain(conn: psycopg.Connection, statement: sql.Composable, citus: bool) -> dict:
    """The top of the statement's plan. On Citus (`citus`: the database is a Citus
    coordinator's, argus.network.placement.installed) in a savepoint rolled back
    after: Citus plans a task on the coordinator's copy of a reference table over a
    connection of its own, and the transaction, which may have written to that
    copy in place, could not read it in place after ("cannot switch local execution
    status from local execution required to local execution disabled"), as a
    registration's backfills do; and with the stream clock's value in place of its
    functions (Citus may plan a statement over reference tables on a worker, where the
    clock is not)."""
    explained = sql.SQL("EXPLAIN (FORMAT JSON) {}").format(statement)
    if not citus:
        return conn.execute(explained).fetchone()[0][0]["Plan"]
    with conn.transaction() as savepoint:
        now, previous = conn.execute("SELECT now, previous FROM argus_catalog.clock").fetchone()
        text = explained.as_string(conn)
        for call, value in (("argus.clock_now()", now), ("argus.clock_previous()", previous)):
            value = sql.SQL("{}::timestamptz").format(sql.Literal(value))
            text = text.replace(call, value.as_string(conn))
        plan = conn.execute(text).fetchone()[0][0]["Plan"]
        raise psycopg.Rollback(savepoint)
    return plan
