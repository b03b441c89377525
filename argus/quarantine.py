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


def rows(conn: psycopg.Connection, stream: str | None = None,
         limit: int | None = None) -> list[tuple]:
    """The held rows (the first `limit` of them): each as jsonb, or where jsonb could not
    hold it, its record's text (its first kilobyte, and its size)."""
    name = None if stream is None else check_name(stream, "stream")
    return conn.execute(
        "SELECT quarantine_id, stream, coalesce(row, to_jsonb(format('%%s… (%%s bytes)', "
        "left(row_text, 1024), octet_length(row_text)))), "
        "reason || CASE WHEN dropped_at IS NULL THEN '' "
        "ELSE format(' (its stream was dropped at %%s: kept, never released)', dropped_at) "
        "END, held_at FROM argus_catalog.quarantine "
        "WHERE %(s)s::text IS NULL OR stream = %(s)s ORDER BY quarantine_id LIMIT %(n)s",
        {"s": name, "n": limit}).fetchall()


def summary(conn: psycopg.Connection, stream: str | None = None) -> list[tuple]:
    """Per stream: (stream, rows held, earliest and latest event time as held, when the
    first and last were held, the reasons) — without reading the rows out (a quarantine
    may hold millions)."""
    name = None if stream is None else check_name(stream, "stream")
    return conn.execute(
        "SELECT q.stream, count(*), min(q.row ->> s.time_column), max(q.row ->> s.time_column),"
        " min(q.held_at), max(q.held_at), string_agg(DISTINCT q.reason, '; ') "
        "FROM argus_catalog.quarantine q LEFT JOIN argus_catalog.streams s ON s.name = q.stream "
        "WHERE %(s)s::text IS NULL OR q.stream = %(s)s GROUP BY q.stream ORDER BY q.stream",
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
                "RETURNING row, row_text), "
                "v AS (SELECT CASE WHEN row IS NULL THEN row_text::{} "
                "                  ELSE jsonb_populate_record(NULL::{}, r.row) END AS v FROM r) "
                "INSERT INTO {} SELECT (v).* FROM v").format(
                    inbox, inbox, inbox), {"s": each, "i": wanted}).rowcount
    return moved
