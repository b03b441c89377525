"""The re-run fallback (settings.rerun_fallback): between maintaining a query
incrementally and re-running it, by what each costs."""

from __future__ import annotations

import time

import psycopg
from psycopg import sql

from ..frontend.temporal import calls_user_clock
from ..mqo.replan import evaluation
from ..admission import over_histories
from ..trees import tree_of
from . import records
from .records import only_used_by, recent_ms

RERUN_OVERHEAD = 1.5  # a re-run node's cycle: the query, then its difference from the answer


def switch_to(conn: psycopg.Connection, name: str, query_id: int, current: str,
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
    own = recent_ms(conn, only_used_by(conn, [query_id]))
    if own is None or own < records.WORTH_MS:
        return None
    if current == "incremental":
        (canonical,) = conn.execute("SELECT canonical FROM argus_catalog.queries "
                                    "WHERE query_id = %s", (query_id,)).fetchone()
        if calls_user_clock(tree_of(canonical)):
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
