"""The ways to keep query answers current that argus is measured against, each on the
same server and the same data, each timed from "a batch arrives" to "every answer is
current" (argus.bench.runner adds the floor to the methods that need the batch in a
plain table first):

- floor: inserting the batch into plain copies of the streams, with no queries at all
  (COPY);
- rerun: every query run from scratch over those copies into a result table (cron +
  plain SQL), or into a temporary table made anew (no WAL: the cheapest re-run);
- matview: `REFRESH MATERIALIZED VIEW` of one view per query over the same copies;
- pg_ivm: one incrementally maintained view (IMMV) per query it accepts, over copies
  of its own; its maintenance runs inside the insert.

Each method keeps its own tables, so that each can run its batches back to back, as it
would in production, without another method's work in between. Queries name streams by
their plain names; each method resolves them with its own search_path.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import psycopg
from psycopg import sql

from ..names import STREAMS_SCHEMA

IVM_SCHEMA = "argus_bench_ivm"  # pg_ivm's copies of the streams and its views
FLOOR_SCHEMA = "argus_bench_floor"  # plain copies that receive the batches


def _search_path(conn: psycopg.Connection, schema: str) -> None:
    conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))


def copy_rows(conn: psycopg.Connection, table: sql.Composable, rows: Sequence[tuple]) -> float:
    """COPY rows into a table; the seconds it took."""
    started = time.perf_counter()
    with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(table)) as copy:
        for row in rows:
            copy.write_row(row)
    return time.perf_counter() - started


def copy_streams(conn: psycopg.Connection, schema: str, streams: Sequence[str]) -> None:
    """Plain tables in `schema` holding what the streams' histories hold now."""
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    for s in streams:
        conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(
            sql.Identifier(schema, s), sql.Identifier(STREAMS_SCHEMA, s)))
        conn.execute(sql.SQL("INSERT INTO {} SELECT * FROM {}").format(
            sql.Identifier(schema, s), sql.Identifier(STREAMS_SCHEMA, s)))
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(schema, s)))


class Floor:
    """Plain copies of the streams that receive every batch; re-run and REFRESH read them."""

    name = "floor"

    def __init__(self, conn: psycopg.Connection, streams: Sequence[str]) -> None:
        self.conn = conn
        copy_streams(conn, FLOOR_SCHEMA, streams)

    def ingest(self, batch: Mapping[str, Sequence[tuple]]) -> float:
        return sum(copy_rows(self.conn, sql.Identifier(FLOOR_SCHEMA, s), rows)
                   for s, rows in batch.items())


class Rerun:
    """Each query re-run from scratch into a result table of its own."""

    name = "rerun"

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.queries: list[tuple[sql.Identifier, str]] = []

    def add(self, name: str, query: str) -> None:
        table = sql.Identifier(f"argus_bench_rerun_{name}")
        with self.conn.transaction():
            _search_path(self.conn, FLOOR_SCHEMA)
            self.conn.execute(sql.SQL("CREATE TABLE public.{} AS {} WITH NO DATA").format(
                table, sql.SQL(query)))  # a benchmark query of our own workloads
            self.conn.execute("RESET search_path")
        self.queries.append((table, query))

    def run(self, only: str | None = None, temporary: bool = False) -> float:
        """Re-run the queries (or only one) into their result tables; `temporary`: into
        a temporary table made anew (no WAL, nothing kept: the cheapest re-run)."""
        started = time.perf_counter()
        with self.conn.transaction():
            _search_path(self.conn, FLOOR_SCHEMA)
            for table, query in self.queries:
                if only is not None and table != sql.Identifier(f"argus_bench_rerun_{only}"):
                    continue
                if temporary:
                    self.conn.execute(sql.SQL("DROP TABLE IF EXISTS pg_temp.{}").format(table))
                    self.conn.execute(sql.SQL("CREATE TEMPORARY TABLE {} AS {}").format(
                        table, sql.SQL(query)))
                    continue
                self.conn.execute(sql.SQL("TRUNCATE public.{}").format(table))
                self.conn.execute(sql.SQL("INSERT INTO public.{} {}").format(table,
                                                                             sql.SQL(query)))
            self.conn.execute("RESET search_path")
        return time.perf_counter() - started

    def rows(self, name: str) -> list[tuple]:
        return self.conn.execute(sql.SQL("SELECT * FROM public.{}").format(
            sql.Identifier(f"argus_bench_rerun_{name}"))).fetchall()


class MatViews:
    name = "matview"

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.views: list[sql.Identifier] = []

    def add(self, name: str, query: str) -> None:
        view = sql.Identifier(f"argus_bench_mv_{name}")
        with self.conn.transaction():
            _search_path(self.conn, FLOOR_SCHEMA)
            self.conn.execute(sql.SQL("CREATE MATERIALIZED VIEW public.{} AS {}").format(
                view, sql.SQL(query)))
            self.conn.execute("RESET search_path")
        self.views.append(view)

    def run(self) -> float:
        started = time.perf_counter()
        with self.conn.transaction():
            for view in self.views:
                self.conn.execute(sql.SQL("REFRESH MATERIALIZED VIEW public.{}").format(view))
        return time.perf_counter() - started


class PgIvm:
    """pg_ivm's IMMVs over copies of the streams (when the server has the extension)."""

    name = "pg_ivm"

    @staticmethod
    def available(conn: psycopg.Connection) -> str | None:
        """None if pg_ivm can be used, else why not."""
        row = conn.execute("SELECT default_version FROM pg_available_extensions "
                           "WHERE name = 'pg_ivm'").fetchone()
        if row is None:
            return "the pg_ivm extension is not installed in this server"
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_ivm")
        except psycopg.Error as exc:
            return f"CREATE EXTENSION pg_ivm failed: {exc.diag.message_primary or exc}"
        return None

    def __init__(self, conn: psycopg.Connection, streams: Sequence[str]) -> None:
        self.conn = conn
        self.streams = streams
        self.accepted: list[str] = []
        self.refused: dict[str, str] = {}
        copy_streams(conn, IVM_SCHEMA, streams)

    def add(self, name: str, query: str) -> bool:
        """Create the query's IMMV; False if pg_ivm refuses the query."""
        try:
            with self.conn.transaction():
                _search_path(self.conn, IVM_SCHEMA)
                self.conn.execute("SELECT pgivm.create_immv(%s, %s)" if self._schema()
                                  else "SELECT create_immv(%s, %s)",
                                  (f"{IVM_SCHEMA}.argus_bench_immv_{name}", query))
                self.conn.execute("RESET search_path")
            self.accepted.append(name)
            return True
        except psycopg.Error as exc:
            self.conn.execute("RESET search_path")
            self.refused[name] = exc.diag.message_primary or str(exc)
            return False

    def drop(self, name: str) -> None:
        self.conn.execute(sql.SQL("DROP TABLE {}").format(
            sql.Identifier(IVM_SCHEMA, f"argus_bench_immv_{name}")))
        self.accepted.remove(name)

    def _schema(self) -> bool:
        """pg_ivm 1.10+ keeps its functions in schema pgivm."""
        return bool(self.conn.execute("SELECT 1 FROM pg_proc p JOIN pg_namespace n ON "
                                      "n.oid = p.pronamespace WHERE p.proname = 'create_immv' "
                                      "AND n.nspname = 'pgivm'").fetchone())

    def ingest(self, batch: Mapping[str, Sequence[tuple]]) -> float:
        """Insert the batch (IMMVs are maintained inside the inserts)."""
        with self.conn.transaction():
            return sum(copy_rows(self.conn, sql.Identifier(IVM_SCHEMA, s), rows)
                       for s, rows in batch.items())
