"""Purged histories and new consumers: a node whose old rows were purged (node_stats.
horizon) feeds only a consumer that would never read them."""

from __future__ import annotations

import psycopg
from psycopg import sql

from ..errors import QueryError
from ..nodes import Node


def check(conn: psycopg.Connection, parent: Node, bounds) -> None:
    """A node whose old rows were purged can only feed a new consumer that would
    never read them: a selection with a lower time bound on the column the node was
    purged by that starts after the horizon (at it, only for a strict bound: the
    rows at the horizon may have been purged). `bounds` is None for any other
    consumer."""
    horizon, column = conn.execute(
        "SELECT horizon, horizon_column FROM argus_catalog.node_stats WHERE node_id = %s",
        (parent.id,)).fetchone()
    if horizon is None:
        return
    stream = conn.execute("SELECT name FROM argus_catalog.streams WHERE node_id = %s",
                          (parent.id,)).fetchone()
    what = f"stream {stream[0]!r}" if stream else f"node {parent.id}"
    kept = f"{column} > {horizon}" if column else f"its rows after {horizon}"
    need = "all of its rows"
    for bound in bounds or []:
        if bound.column != column:
            continue
        ok, start = conn.execute(sql.SQL(
            "SELECT ({})::timestamptz {} %s::timestamptz, ({})::text").format(
                sql.SQL(bound.expr), sql.SQL(">=" if bound.op == ">" else ">"),
                sql.SQL(bound.expr)), (horizon,)).fetchone()
        if ok:
            return
        need = f"the rows with {column} {bound.op} {start}"
    if bounds and need == "all of its rows":
        need = f"rows older than {kept} by its other columns"
    raise QueryError(
        f"{what} keeps only the rows with {kept}: older rows were purged because every "
        f"query reading it is windowed on {column}; this query needs {need}. Give it a "
        f"window on {column} that starts after {horizon}.")
