"""One cycle: `argus.run_cycle()` in the database does the work (see catalog/), so a
cycle run from Python, psql or pg_cron is the same cycle. This module calls it and
turns the run's log into a report.

The whole cycle is one transaction holding the cycle lock: it commits entirely or not
at all. A failure inside the network program rolls the program back (the claimed rows
return to the inboxes) and is committed as a failed run in argus.runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import psycopg

from .errors import CycleError, CycleInProgressError


@dataclass
class CycleReport:
    run_id: int
    rows_in: dict[str, int]  # stream -> rows claimed
    new_rows: dict[str, int]  # query -> rows inserted into its answer
    retracted: dict[str, int]  # query -> rows retracted from its answer
    nodes_run: int
    seconds: float
    node_ms: dict[int, float] = field(default_factory=dict, repr=False)

    @property
    def total_in(self) -> int:
        return sum(self.rows_in.values())


def run(conn: psycopg.Connection, *, wait: bool = True) -> CycleReport:
    started = time.perf_counter()
    try:
        with conn.transaction():
            (run_id,) = conn.execute("SELECT argus.run_cycle(%s)", (wait,)).fetchone()
    except psycopg.Error as exc:  # the server went away, or a bug of ours
        raise CycleError(f"cycle failed and was rolled back: {exc}") from exc
    seconds = time.perf_counter() - started
    if run_id is None:
        raise CycleInProgressError(
            "another argus cycle (or registration) is running on this database; this cycle "
            "did nothing, and the rows waiting will be claimed by the next one")
    return report(conn, run_id, seconds)


def report(conn: psycopg.Connection, run_id: int, seconds: float = 0.0) -> CycleReport:
    status, error, nodes_run = conn.execute(
        "SELECT status, error, nodes_run FROM argus_catalog.runs WHERE run_id = %s",
        (run_id,)).fetchone()
    if status == "failed":
        raise CycleError(f"cycle {run_id} failed and was rolled back, its rows wait in the "
                         f"inboxes: {error}")
    rows_in = dict(conn.execute("SELECT stream, rows FROM argus_catalog.run_streams "
                                "WHERE run_id = %s ORDER BY stream", (run_id,)).fetchall())
    queries = conn.execute("SELECT query, inserted, retracted FROM argus_catalog.run_queries "
                           "WHERE run_id = %s ORDER BY query", (run_id,)).fetchall()
    node_ms = dict(conn.execute("SELECT node_id, ms FROM argus_catalog.run_nodes "
                                "WHERE run_id = %s", (run_id,)).fetchall())
    return CycleReport(run_id, rows_in, {q: i for q, i, _ in queries},
                       {q: r for q, _, r in queries}, nodes_run, seconds, node_ms)
