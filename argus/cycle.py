"""One cycle: `argus.run_cycle()` in the database does the work (see catalog/), so a
cycle run from Python, psql or pg_cron is the same cycle. This module calls it and
turns the run's log into a report.

The whole cycle is one transaction holding the cycle lock: it commits entirely or not
at all. When a node fails, the queries that use it are isolated (`failed` in the
report, argus.queries) and the cycle runs again without them; any other failure rolls
the program back (the claimed rows return to the inboxes) and is committed as a failed
run in argus.runs.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from .errors import STATE_LOST, CycleError, CycleInProgressError, PermissionDeniedError
from . import tidy


@dataclass
class CycleReport:
    run_id: int
    rows_in: dict[str, int]  # stream -> rows claimed
    new_rows: Counter[str]  # query -> rows inserted into its answer (0 if not there)
    retracted: Counter[str]  # query -> rows retracted from its answer (0 if not there)
    nodes_run: int
    seconds: float
    failed: dict[str, str] = field(default_factory=dict)  # query isolated -> its error
    quarantined: dict[str, int] = field(default_factory=dict)  # stream -> rows held back
    # queries whose answer is a deferred join (changes computed when read, argus
    # explain) and whose inputs changed: they may have changed, by as many rows as
    # their changes view holds (no cycle counts them)
    deferred: list[str] = field(default_factory=list)
    # the queries planned again after it (argus.adapt.Decision), when it ended a period
    # of settings.reoptimize_every or showed a query's joins writing far more per row in
    # than after its last plan (Zhu's trigger)
    migrations: list = field(default_factory=list, repr=False)

    @property
    def total_in(self) -> int:
        return sum(self.rows_in.values())


# On Citus, a connection to a worker that the session cached before the worker restarted
# fails the next transaction that uses it: the cycle is rolled back and run once more.
STALE_WORKER = "failure on connection marked as essential"


# A cycle that ran past node_timeout isolated the query of the node then running and
# is run again (a new statement: a new timer) at most this many times.
TIMED_OUT_RETRIES = 3

_TIMEOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def timeout(conn: psycopg.Connection) -> str | None:
    """settings.node_timeout, read once per connection (forget() after a change); None:
    no limit. A statement cannot arm its own timer: the client arms it for the cycle."""
    if conn not in _TIMEOUTS:
        try:
            with conn.transaction():
                _TIMEOUTS[conn] = conn.execute("SELECT argus.node_timeout()").fetchone()[0]
        except psycopg.errors.UndefinedFunction:
            _TIMEOUTS[conn] = None
        except psycopg.errors.InsufficientPrivilege:  # (a reader's, say; a helper)
            raise PermissionDeniedError(
                f"role {conn.info.user!r} may not run argus's cycles: argus's owner runs "
                "them, or a role it granted writer (argus grant writer ROLE)") from None
    return _TIMEOUTS[conn]


def forget(conn: psycopg.Connection) -> None:
    _TIMEOUTS.pop(conn, None)


def run(conn: psycopg.Connection, *, wait: bool = True, tidy_up: bool = True) -> CycleReport:
    started = time.perf_counter()
    limit = timeout(conn)
    isolated: dict[str, str] = {}  # by runs that timed out, and ran again
    for attempt in range(TIMED_OUT_RETRIES + 1):
        try:
            row = _cycle(conn, wait, limit)
        except CycleError as exc:  # a crash emptied the network's unlogged tables?
            if STATE_LOST not in str(exc):
                raise
            from .network import durability  # (the planner's modules: only after a crash)

            try:  # (or another session rebuilt it meanwhile; or nothing to rebuild)
                durability.rebuild_if_lost(conn)
            except psycopg.Error:  # a role that may not rebuild: argus's owner will
                raise exc from None
            row = _cycle(conn, wait, limit)
        if row is None or row[1] != "timed_out" or attempt == TIMED_OUT_RETRIES:
            break
        isolated.update(row[6])
    if row is None:
        raise CycleInProgressError(
            "another argus cycle (or registration) is running on this database; this cycle "
            "did nothing, and the rows waiting will be claimed by the next one")
    *report, triggered, period_ended = row
    try:
        result = _report(report[0], report[1:], time.perf_counter() - started)
    except CycleError:  # (cancelled before node_timeout: a timer armed from an old one?)
        forget(conn)
        raise
    result.failed = {**isolated, **result.failed}
    if tidy_up and (result.nodes_run or result.total_in) \
            and tidy.due(result.run_id, result.total_in):
        tidy.vacuum_grown(conn)
    if period_ended or triggered:  # (settings.reoptimize_every; Zhu's trigger)
        from . import adapt

        result.migrations = adapt.reoptimize(conn) if period_ended else \
            adapt.replan_triggered(conn, triggered)
    return result


log = logging.getLogger(__name__)  # (argus's command line prints its messages)
_HEARD: weakref.WeakSet = weakref.WeakSet()


def _heard(conn: psycopg.Connection) -> None:
    """The cycle's own notices (a node that took over a second, requests that wait),
    passed on to argus's log as they arrive: a sign of life during a long cycle."""
    def said(diag: psycopg.errors.Diagnostic) -> None:
        if (diag.message_primary or "").startswith("argus: "):
            log.info("%s", diag.message_primary)

    if conn not in _HEARD:
        _HEARD.add(conn)
        conn.add_notice_handler(said)


def _cycle(conn: psycopg.Connection, wait: bool, limit: str | None):
    """argus.cycle's row (None: another cycle was running), under the time limit armed
    for the cycle's transaction alone."""
    # a client that goes away (killed) has the server cancel its cycle within a second,
    # not run it to the end holding the cycle lock
    _heard(conn)
    cycle = sql.SQL("SELECT set_config('client_connection_check_interval', '1s', true); "
                    "SELECT * FROM argus.cycle({})").format(sql.Literal(wait))
    if limit is not None:
        cycle = sql.SQL("SELECT set_config('statement_timeout', {}, true); {}").format(
            sql.Literal(limit), cycle)
    for again in (True, False):
        try:
            # on an autocommit connection one message of several statements is one
            # implicit transaction (the limit is local to it) and one round trip
            with nullcontext() if conn.autocommit else conn.transaction():
                cur = conn.execute(cycle)
                while cur.nextset():
                    pass
                return cur.fetchone()
        except psycopg.Error as exc:  # cancelled, the server went away, or a bug of ours
            if not (again and STALE_WORKER in str(exc)):
                raise CycleError(f"cycle failed and was rolled back{_recorded(conn, exc)}: "
                                 f"{exc}") from exc
    return None


def _recorded(conn: psycopg.Connection, exc: psycopg.Error) -> str:
    """Record a cycle the server rolled back as a run of its own (argus.runs shows
    it); what to say of it."""
    if conn.closed or conn.broken:
        return ""
    try:
        with nullcontext() if conn.autocommit else conn.transaction():
            (run_id,) = conn.execute("SELECT argus.record_rollback(%s)",
                                     (str(exc).strip(),)).fetchone()
    except psycopg.Error:  # (an older catalog, a role without the function)
        return ""
    return f" (run {run_id})"


def report(conn: psycopg.Connection, run_id: int, seconds: float = 0.0) -> CycleReport:
    """A past run's report, from its log."""
    return _report(run_id, conn.execute("SELECT * FROM argus.cycle_report(%s)",
                                        (run_id,)).fetchone(), seconds)


def _report(run_id: int, row: tuple, seconds: float) -> CycleReport:
    status, error, nodes_run, rows_in, held, failed, queries = row
    if status == "failed":
        raise CycleError(f"cycle {run_id} failed and was rolled back, its rows wait in the "
                         f"inboxes: {error}")
    counted = sorted((q, n) for q, n in queries.items() if n[0] is not None)
    return CycleReport(run_id, dict(sorted(rows_in.items())),
                       Counter({q: i for q, (i, _) in counted}),
                       Counter({q: r for q, (_, r) in counted}), nodes_run, seconds,
                       dict(sorted(failed.items())), dict(sorted(held.items())),
                       deferred=sorted(q for q, (i, _) in queries.items() if i is None))
