"""Continuous results that reach the application: a query's committed changes, in
order, each cycle's once, from a log the cycle writes (catalog/schema.sql: change_logs, consumers).

A subscriber without a position starts from the answer as it is (every row +1, at the
position of the last cycle its snapshot sees), then follows the log; a named consumer
resumes after the last position it acknowledged. It waits for cycles with LISTEN
argus_cycle (each committed cycle notifies it), not by polling.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from .errors import ArgusError, ChangesLostError, QueryFailedError, UnknownQueryError
from .names import SIGN, change_log, check_name, results_view
from .settings import pin_search_path

CHANNEL = "argus_cycle"


@dataclass(frozen=True)
class Changes:
    """One cycle's net changes of a query (or, `snapshot`, its whole answer): each row
    with its sign last (+1 inserted, -1 retracted), as argus_changes shows them."""
    position: int
    rows: list[tuple]
    columns: list[str] = field(default_factory=list)  # the rows' columns, argus_sign last
    snapshot: bool = False


def _errors(exc: psycopg.Error) -> ArgusError:
    text = exc.diag.message_primary or str(exc)
    if exc.sqlstate == "42704":
        return UnknownQueryError(text.removeprefix("argus: "))
    if exc.sqlstate == "55000" and "no longer kept" in text:
        return ChangesLostError(f"{text.removeprefix('argus: ')}: {exc.diag.message_hint}")
    if exc.sqlstate == "55000" and "failed and is isolated" in text:
        return QueryFailedError(f"{text.removeprefix('argus: ')}; {exc.diag.message_hint}")
    return ArgusError(text.removeprefix("argus: "))


def acknowledge(conn: psycopg.Connection, name: str, consumer: str, position: int) -> None:
    """Consumer `consumer` of query `name` has every change up to `position` (in the
    caller's transaction: with the consumer's own writes, exactly once)."""
    try:
        conn.execute("SELECT argus.acknowledge(%s, %s, %s)", (name, consumer, position))
    except psycopg.Error as exc:
        raise _errors(exc) from None


def subscribe(dsn: str, name: str, consumer: str | None = None, since: int | None = None,
              timeout: float | None = None) -> Iterator[Changes]:
    """Each committed cycle's changes to query `name`'s answer, in order, as they
    happen; on its own connection. `since`: the position to follow from (else: a named
    consumer's, or the answer now as a snapshot). A named consumer's position is
    acknowledged when it asks for the next changes (a consumer that crashes while
    handling some gets them again; to have them exactly once, call
    `argus.acknowledge` in the transaction that applies them). `timeout`: stop after
    so many seconds without a change (None: never). A query that fails and is isolated
    raises QueryFailedError once its logged changes are read."""
    name = check_name(name, "query")
    with psycopg.connect(dsn, autocommit=True, application_name="argus subscribe") as conn:
        pin_search_path(conn)  # (argus's statements: settings.pin_search_path)
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
        try:
            position, new = conn.execute("SELECT * FROM argus.subscribe(%s, %s)",
                                         (name, consumer)).fetchone()
            if since is not None:
                position = since
            elif new:
                snapshot = _snapshot(conn, name)
                position = snapshot.position
                yield snapshot
                if consumer is not None:
                    acknowledge(conn, name, consumer, position)
            idle_since = time.monotonic()
            while True:
                batches = _read(conn, name, position)
                for batch in batches:
                    yield batch
                    position = batch.position
                    if consumer is not None:
                        acknowledge(conn, name, consumer, position)
                if batches:
                    idle_since = time.monotonic()
                    continue
                left = None if timeout is None else timeout - (time.monotonic() - idle_since)
                if left is not None and left <= 0:
                    return
                for _ in conn.notifies(timeout=left, stop_after=1):
                    pass
        except psycopg.Error as exc:
            raise _errors(exc) from None


def _snapshot(conn: psycopg.Connection, name: str) -> Changes:
    """The answer and the position of the last cycle it reflects, in one snapshot."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        position = cur.execute("SELECT argus.position()").fetchone()[0]
        rows = cur.execute(sql.SQL("SELECT *, 1::smallint AS {} FROM {}").format(
            sql.Identifier(SIGN), results_view(name))).fetchall()
        columns = [c.name for c in cur.description]
    return Changes(position, rows, columns, snapshot=True)


def _read(conn: psycopg.Connection, name: str, position: int) -> list[Changes]:
    """The logged changes after `position`, a Changes per cycle (its retractions
    first); an error if the log no longer keeps all of them (asked after reading them:
    a cut meanwhile shows), or, when there are none, if the query failed and is
    isolated (it logs nothing more until retried: argus.check_running)."""
    with conn.cursor() as cur:
        cur.execute(sql.SQL("SELECT * FROM {} WHERE argus_position > %s ORDER BY "
                            "argus_position, {}").format(change_log(name), sql.Identifier(SIGN)),
                    (position,))
        columns = [c.name for c in cur.description][1:]
        rows = cur.fetchall()
        cur.execute("SELECT argus.check_position(%s, %s, argus.log_since(%s))"
                    + ("" if rows else ", argus.check_running(%s)"),
                    (name, position, name) + (() if rows else (name,)))
    batches: list[Changes] = []
    for row in rows:
        if not batches or batches[-1].position != row[0]:
            batches.append(Changes(row[0], [], columns))
        batches[-1].rows.append(row[1:])
    return batches
