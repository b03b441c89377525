"""Reading a query's answer or last changes (argus_results, argus_changes) for the
application: checked in the same statement, and planned once a session."""

from __future__ import annotations

import psycopg
from psycopg import sql

from . import registry, settings
from .errors import QueryError
from .names import check_name
from .registry import QueryInfo


def read(conn: psycopg.Connection, view, name: str, limit: int | None, on_citus: bool
         ) -> list[tuple]:
    """The view's rows, checked in the same statement (argus.answer_ok): an unknown
    or isolated query raises as registry.check_ok says. Checked first, as it was, on
    Citus (which would run the check on its workers: no argus there), inside the
    caller's transaction (a failed check would abort it) and for no rows (LIMIT 0
    evaluates no filter; found by a helper)."""
    name = check_name(name, "query")
    if limit is not None and int(limit) < 0:
        raise QueryError(f"limit must be 0 or more, not {limit}")
    limited = sql.SQL("") if limit is None else sql.SQL(" LIMIT {}").format(
        sql.Literal(int(limit)))
    plain = sql.SQL("SELECT * FROM {}{}").format(view(name), limited)
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    if not on_citus and idle and (limit is None or limit > 0):
        try:
            return _planned_once(conn, sql.SQL(
                "SELECT * FROM {} WHERE argus.answer_ok({}){}").format(
                    view(name), sql.Literal(name), limited))
        except psycopg.Error as exc:
            if exc.sqlstate == "AR002":
                with settings.pinned_path(conn):
                    raise registry.unknown_query(conn, name) from None
            if exc.sqlstate == "AR001":
                QueryInfo(name, "", [], 0, [], exc.diag.message_hint,
                          exc.diag.message_primary or None).check_ok()
            if exc.sqlstate not in ("42P01", "42501"):
                raise
    with settings.pinned_path(conn):
        registry.check_ok(conn, name)  # (no such view, or not theirs: it says so)
        return _planned_once(conn, plain)


def _planned_once(conn: psycopg.Connection, read: sql.Composable) -> list[tuple]:
    """The rows of a statement without parameters, prepared: planning a changes view
    costs ~1.8 ms and running it ~0.4 (TPC-H's), and a prepared statement without
    parameters keeps one plan for the session, which PostgreSQL makes anew when a
    table it reads is truncated or analyzed. When another session registered the
    query again with other columns ("cached plan must not change result type"; found
    by a helper), the session's prepared statements go and the read is planned anew."""
    try:
        return conn.execute(read, prepare=True).fetchall()
    except psycopg.errors.FeatureNotSupported as exc:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise QueryError(  # (the caller's transaction, now aborted: not ours to retry)
                f"this session's plan of the read no longer fits the query, registered "
                f"again with other columns ({exc.diag.message_primary}): roll the "
                f"transaction back and read again") from None
        conn.execute("DEALLOCATE ALL")  # (psycopg forgets its own statements with it)
        return conn.execute(read, prepare=False).fetchall()
