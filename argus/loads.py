"""Loads with an id, exactly once: a load's rows reach its stream's inbox in the same
transaction that records its id, so a retried or re-run load is a no-op and a crashed
one leaves nothing behind.

Rows given in Python are COPied straight into the inbox inside that transaction. Spark
writes from many tasks and connections, which may retry: it writes into a per-load
staging table, each row tagged with its partition and position, and `commit_staged`
moves the rows into the inbox — each (partition, position) once — and records the id.
A load holds a lock on its id from staging to commit (`load_lock`), so that the same
load started twice runs once; staging tables a failed or killed load left behind are
swept (`sweep_staging`) by the next load or cycle, once no live load holds them.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from .errors import LoadError, UnknownStreamError
from .frontend.analyze import StreamSchema
from . import tables
from .names import STAGING_SCHEMA, check_name
from .settings import pinned_path
from .streams import copy_rows, plain_rows, stream_schemas


@dataclass(frozen=True)
class LoadResult:
    load_id: str | None
    stream: str
    rows: int
    duplicate: bool = False  # the id was loaded before: nothing was loaded this time


def claim_id(conn: psycopg.Connection, load_id: str, stream: str, source: str) -> bool:
    """Record the load id in the current transaction; False if it was loaded before.
    A concurrent load of the same id waits here until the first one commits."""
    return conn.execute("SELECT argus.claim_load(%s, %s, %s)",
                        (load_id, stream, source)).fetchone()[0]


class Inboxes:
    """The column lists of the streams a session loads: a list of tuples, the common
    case, is loaded by one COPY statement, a round trip and a commit like a bare COPY,
    with no catalog query or transaction around it: its tuples go in the inbox's column
    order as it is now, and the list read once only checks their width. Any other rows
    (dicts, iterators) read the stream's columns first, as every load once did. A COPY
    that finds the inbox gone or other columns (a stream re-declared by another session)
    reads them again, and a list is retried once."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self._schemas: dict[str, StreamSchema] = {}

    def schema(self, name: str, fresh: bool = False, what: str = "stream") -> StreamSchema:
        if fresh or name not in self._schemas:
            with pinned_path(self.conn):  # (a load itself is one COPY: Argus._UNSWITCHED)
                schema = stream_schemas(self.conn).get(name)
            if schema is None:
                self._schemas.pop(name, None)
                raise UnknownStreamError(f"unknown {what} {name!r}")
            self._schemas[name] = schema
        return self._schemas[name]

    def columns(self, name: str, fresh: bool = False) -> tuple[str, ...]:
        return self.schema(name, fresh).column_names

    def load(self, stream: str, rows: Iterable[object], load_id: str | None = None
             ) -> LoadResult:
        name = check_name(stream, "stream")
        columns = self.columns(name)
        plain = plain_rows(rows, len(columns))
        if not plain:  # (read the columns; tuples may fit them as they are now)
            columns = self.columns(name, fresh=True)
            plain = plain_rows(rows, len(columns))
        schema = self.schema(name)  # a table's rows are named: its inbox has more columns
        tables.refuse_tracked(schema)
        try:
            return _load(self.conn, name, columns, rows, load_id, plain,
                         schema.primary_key is not None)
        except LoadError:  # the schema read before may be stale: read it again
            if self.schema(name, fresh=True) == schema:
                raise
            if not isinstance(rows, Sequence):
                raise LoadError(f"stream {name!r} was changed by another session (now: "
                                f"{', '.join(self.columns(name))}); nothing was loaded, "
                                "load again") from None
            return _load(self.conn, name, self.columns(name), rows, load_id,
                         named=self.schema(name).primary_key is not None)


def _load(conn: psycopg.Connection, name: str, columns: tuple[str, ...],
          rows: Iterable[object], load_id: str | None, plain: bool | None = None,
          named: bool = False) -> LoadResult:
    if load_id is None:
        # On an idle autocommit connection the COPY is its own transaction (nothing
        # around it: a bare COPY's cost); within the caller's transaction, a savepoint
        # keeps a failed load from aborting it.
        alone = conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE
        with contextlib.nullcontext() if alone else conn.transaction():
            return LoadResult(None, name, copy_rows(conn, name, columns, rows, plain,
                                                    named))
    with conn.transaction():
        if not claim_id(conn, load_id, name, "copy"):
            return LoadResult(load_id, name, 0, duplicate=True)
        count = copy_rows(conn, name, columns, rows, plain, named)
        conn.execute("SELECT argus.count_load(%s, %s, %s)", (load_id, name, count))
    return LoadResult(load_id, name, count)


def staging_name(stream: str, load_id: str) -> str:
    """As argus.staging_name(): the staging table of a load id into a stream."""
    return f"load_{hashlib.sha256(f'{stream}.{load_id}'.encode()).hexdigest()[:20]}"


def staging_table(stream: str, load_id: str) -> sql.Identifier:
    return sql.Identifier(STAGING_SCHEMA, staging_name(stream, load_id))


LOAD_LOCK = 0x41524C44  # "ARLD": pg_advisory_lock(LOAD_LOCK, hashtext('stream.load id'))


@contextlib.contextmanager
def load_lock(conn: psycopg.Connection, stream: str, load_id: str) -> Iterator[None]:
    """Hold the load id for as long as the load runs (on `conn`'s session): the same id
    loaded into the stream from a second process waits here, then finds it loaded."""
    key = (LOAD_LOCK, f"{stream}.{load_id}")
    conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", key)
    try:
        yield
    finally:
        if not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", key)


def drop_staging(conn: psycopg.Connection, stream: str, load_id: str) -> None:
    """Forget a load's staging table (its rows were moved, or the load failed)."""
    conn.execute("SELECT argus.drop_staging(%s, %s)", (stream, load_id))


def sweep_staging(conn: psycopg.Connection) -> list[str]:
    """Drop the staging tables of loads that died (older than the setting
    stale_staging_after, and no live load holds their id); the load ids swept."""
    (swept,) = conn.execute("SELECT argus.sweep_staging()").fetchone()
    return swept


def already_loaded(conn: psycopg.Connection, stream: str, load_id: str) -> bool:
    return conn.execute("SELECT argus.loaded(%s, %s)", (load_id, stream)).fetchone()[0]


def prepare_staging(conn: psycopg.Connection, stream: str, load_id: str) -> sql.Identifier:
    """A fresh staging table shaped like the inbox (NOT NULL included), plus the
    (partition, position) tag of each row; the session's role may write it (the owner
    creates it, argus.prepare_staging, for whoever may load the stream)."""
    (name,) = conn.execute("SELECT argus.prepare_staging(%s, %s)", (stream, load_id)).fetchone()
    return sql.Identifier(STAGING_SCHEMA, name)


def commit_staged(conn: psycopg.Connection, stream: str, load_id: str,
                  source: str) -> LoadResult:
    """Move a staged load into the inbox, once, and drop the staging table."""
    try:
        (count,) = conn.execute("SELECT argus.commit_staged(%s, %s, %s)",
                                (stream, load_id, source)).fetchone()
    except psycopg.errors.UndefinedTable:
        raise LoadError(f"load {load_id!r}: its staged rows are gone (was it committed "
                        "by another process?); nothing was loaded") from None
    if count is None:
        return LoadResult(load_id, stream, 0, duplicate=True)
    return LoadResult(load_id, stream, count)
