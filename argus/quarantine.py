"""Rows a cycle held back (argus_catalog.quarantine): an event time further ahead of the
server's clock than `max_clock_lead` would move the stream clock and expire every
window at once. Nothing is dropped: the rows wait here, with the reason, until they
are released back into their inboxes."""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from psycopg import sql

from .errors import UnknownStreamError
from .names import check_name, stream_inbox


def rows(conn: psycopg.Connection, stream: str | None = None) -> list[tuple]:
    name = None if stream is None else check_name(stream, "stream")
    return conn.execute(
        "SELECT quarantine_id, stream, row, reason || CASE WHEN dropped_at IS NULL THEN '' "
        "ELSE format(' (its stream was dropped at %%s: kept, never released)', dropped_at) "
        "END, held_at FROM argus_catalog.quarantine "
        "WHERE %(s)s::text IS NULL OR stream = %(s)s ORDER BY quarantine_id",
        {"s": name}).fetchall()


def release(conn: psycopg.Connection, stream: str | None = None,
            ids: Iterable[int] | None = None) -> int:
    """Move quarantined rows back into their inboxes, in one transaction; the count."""
    name = None if stream is None else check_name(stream, "stream")
    wanted = None if ids is None else [int(i) for i in ids]
    moved = 0
    with conn.transaction():
        streams = [r[0] for r in conn.execute(
            "SELECT DISTINCT stream FROM argus_catalog.quarantine "
            "WHERE (%(s)s::text IS NULL OR stream = %(s)s) AND dropped_at IS NULL "
            "AND (%(i)s::bigint[] IS NULL OR quarantine_id = ANY(%(i)s)) ORDER BY 1",
            {"s": name, "i": wanted})]
        known = {r[0] for r in conn.execute("SELECT name FROM argus_catalog.streams")}
        if name is not None and name not in known:
            raise UnknownStreamError(f"unknown stream {name!r}")
        for each in streams:
            inbox = stream_inbox(each)
            moved += conn.execute(sql.SQL(
                "WITH r AS (DELETE FROM argus_catalog.quarantine "
                "WHERE stream = %(s)s AND dropped_at IS NULL "
                "AND (%(i)s::bigint[] IS NULL OR quarantine_id = ANY(%(i)s)) "
                "RETURNING row) "
                "INSERT INTO {} SELECT (jsonb_populate_record(NULL::{}, r.row)).* FROM r").format(
                    inbox, inbox), {"s": each, "i": wanted}).rowcount
    return moved
