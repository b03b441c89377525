"""Purging: the rows of a node that no consumer can need again."""

from __future__ import annotations

from psycopg import sql

from ..frontend.temporal import clock_variables
from ..templates import render
from .base import KINDS, Node, virtual


def purge_block(node: Node, children: list[Node], time_column: str | None = None,
                on_workers: bool = False) -> sql.Composed | None:
    """Delete the rows of `node` that no consumer can need again: when every consumer is
    a selection with a lower time bound on one column it passes through from `node` —
    for a stream, its time column (a window on another column says nothing of what a
    later query on the time column needs). The horizon records the column. An
    aggregate's, a DISTINCT's or a set operation's rows are the state of its groups:
    a group that left a window may come back, and must come back counted; a Top-K's
    are each partition's top rows, which new rows are ranked among. A history
    on the Citus workers (`on_workers`) is not purged by a column of another type than
    timestamptz: comparing it with the clock converts it through the time zone, a
    function of the row that Citus refuses in a DELETE ("STABLE functions used in
    UPDATE queries cannot be called with column references"); it keeps its rows."""
    if KINDS[node.kind].keeps_state(node) or virtual(node) or not children:
        return None
    bounds_by_child = []
    for child in children:
        if not (child.kind == "select" and child.spec.monotone):
            return None
        bounds_by_child.append([b for b in child.spec.bounds
                                if b.column in node.columns])
    common = set.intersection(*({b.column for b in bounds} for bounds in bounds_by_child))
    if time_column is not None:
        common &= {time_column}
    if not common:
        return None
    column = min(common)
    if on_workers and node.types and node.types[node.columns.index(column)] not in (
            "timestamptz", "timestamp with time zone"):
        return None
    failed, horizons = [], []
    for bounds in bounds_by_child:
        mine = [b for b in bounds if b.column == column]
        failed.append("(" + " OR ".join(b.failed() for b in mine) + ")")
        horizons.append("greatest(" + ", ".join(f"({b.expr})" for b in mine) + ")")
    return render("node/purge", hist=node.hist,
                  failed=sql.SQL(clock_variables(" AND ".join(failed))),
                  horizon=sql.SQL(clock_variables("least(" + ", ".join(horizons) + ")")),
                  column=sql.Literal(column), id=sql.Literal(node.id))
