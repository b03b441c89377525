"""The public Python API: `argus.connect()` and the `Argus` handle it returns."""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Iterable, Iterator, Mapping

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg import sql

from . import (alchemy, catalog, citus, cycle, lean, network, quarantine, reading, registry,
               requests, roles, settings, slot, streams, subscriptions, tables, track)
from . import loads as load_ops
from .dsn import resolve_dsn
from .frontend.analyze import StreamSchema
from .cycle import CycleReport
from .nodes import CODE_VERSION
from .errors import CatalogError, PermissionDeniedError, QueryError, ServerError
from .names import CHANGES_SCHEMA, RESULTS_SCHEMA, changes_view, check_name, results_view
from .network import placement
from .registry import QueryInfo
from .mqo.sharing import Sharing


def connect(dsn=None, sharing: Sharing | str | None = None) -> Argus:
    """Connect to a PostgreSQL database and make sure it holds the current catalog.
    `dsn`: a libpq connection string, or an SQLAlchemy Engine or URL.

    sharing: how the queries this connection registers share the network's nodes —
    "selection" (ARGUS's sharing-selection, the default), "match-plan" or "none";
    default $ARGUS_SHARING, else "selection"."""
    return Argus(resolve_dsn(dsn), sharing)


def _prepare(conn: psycopg.Connection) -> bool:
    """Bring the catalog and code up to date and set up the roles, when this session
    may act as argus's owner; else check that the owner did. True for the owner."""
    session = roles.session(conn)
    if session is None or session.owner:
        catalog.migrate(conn)
        if network.recompile_stale(conn):  # (an older argus's capture code too)
            track.refresh_captures(conn)
        roles.setup(conn)
        network.settle(conn)
        lean.record(conn)  # (a cycle-only session of these files need check none of it)
        return True
    if (session.version != catalog.latest_version() or session.catalog_code != catalog.code()[0]
            or session.code_version < CODE_VERSION):
        owner = f"a member of role {session.prefix}_owner" if session.prefix else "its owner"
        raise CatalogError("this database's argus catalog was made by another version of "
                           f"argus: {owner} upgrades it by connecting once")
    return False


def _pinned(cls: type) -> type:
    """Every public method runs argus's statements on the search_path cycles run with,
    and gives the session its own back after (settings.pinned_path)."""
    def pinned(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            with settings.pinned_path(self.conn):
                return method(self, *args, **kwargs)
        return call

    for name, member in list(vars(cls).items()):
        if isinstance(member, types.FunctionType) and not name.startswith("_") \
                and name not in ("close", *_UNSWITCHED):
            setattr(cls, name, pinned(member))
    return cls


# Reading an answer, and a load, run one statement of schema-qualified names (an answer
# with argus.answer_ok, a COPY into the inbox), each pinned where it reads the catalog
# (Argus._read's errors, loads.Inboxes.schema): switching the path at each call made
# PostgreSQL plan every statement again (0.15 → 0.37 ms a read), and a load was one
# COPY (test_a_load_is_one_statement_on_an_idle_connection).
_UNSWITCHED = ("results", "new_results", "insert", "load")


@_pinned
class Argus:
    """A connection to one database's argus. A role that may act as its owner (the one
    that installed it, or a member of its owner role) does everything here; a role it
    granted (argus.roles) does what it was granted: a registrar's streams and queries
    are requests the owner's processes carry out (argus.requests)."""

    def __init__(self, dsn: str, sharing: Sharing | str | None = None) -> None:
        self.dsn = dsn
        self.sharing = Sharing.of(sharing or os.environ.get("ARGUS_SHARING"))
        try:
            self.conn = psycopg.connect(dsn, autocommit=True, application_name="argus")
        except psycopg.OperationalError as exc:
            hint = ""
            if exc.sqlstate == "3D000" or "does not exist" in str(exc) and "database" in str(exc):
                name = conninfo_to_dict(dsn).get("dbname", "NAME")
                hint = (f"; create it first (createdb {name}, or CREATE DATABASE in psql): "
                        "argus then installs its catalog there at the first connection")
            raise ServerError(f"cannot connect to PostgreSQL: {str(exc).strip()}{hint}") from None
        except psycopg.ProgrammingError as exc:  # (libpq could not read the DSN)
            raise ServerError(f"not a PostgreSQL connection string: {exc}".strip()) from None
        try:
            version = self.conn.info.server_version
            if version < 150000:
                raise ServerError(f"argus needs PostgreSQL 15 or newer, this server is {version}")
            # cycles need READ COMMITTED (argus.run_cycle), whatever the database's default
            self.conn.execute("SET default_transaction_isolation = 'read committed'")
            with settings.pinned_path(self.conn):
                self.owner = _prepare(self.conn)
            self.inboxes = load_ops.Inboxes(self.conn)
        except BaseException:
            self.conn.close()
            raise

    # -- streams ---------------------------------------------------------------

    def create_stream(self, name, columns: Mapping[str, str] | None = None,
                      time_column: str | None = None,
                      if_not_exists: bool = False) -> StreamSchema:
        """A stream `name` of `columns` (name -> PostgreSQL type); or `name` an
        SQLAlchemy Table, declaring its name and columns. `if_not_exists`: keep a stream
        declared so already (one declared otherwise is refused)."""
        if alchemy.is_table(name) and columns is None:
            table = alchemy.table_of(name)
            name, columns = table.name, alchemy.columns_of(table)
        if columns is None:
            raise QueryError(f"stream {name!r}: no columns")
        if not self.owner:
            requests.submit(self.conn, "create_stream", name,
                            {"columns": [list(c) for c in dict(columns).items()],
                             "time_column": time_column})
            return streams.stream_schemas(self.conn)[check_name(name, "stream")]
        return streams.create_stream(self.conn, name, columns, time_column,
                                     if_not_exists=if_not_exists)

    def create_table(self, name: str, columns: Mapping[str, str],
                     primary_key: str | Iterable[str]) -> StreamSchema:
        """A table `name` of `columns`: an input whose rows are inserted (`insert`),
        replaced (`update`) and deleted (`delete`) by `primary_key`; the queries over it
        retract what its changes retract."""
        if not self.owner:
            raise PermissionDeniedError("only a member of argus's owner role creates tables")
        return streams.create_stream(self.conn, name, columns, primary_key=primary_key)

    def update(self, table: str, rows: Iterable[object]) -> int:
        """Replace rows of a table by their key (tuples in column order, or dicts), all
        or none: a key the table does not have fails the load, naming it."""
        schema = self.inboxes.schema(check_name(table, "table"), what="table")
        tables.key_of(schema)
        tables.refuse_tracked(schema)
        return tables.load_changes(self.conn, schema.name, "update",
                                   list(schema.column_names), rows)

    def delete(self, table: str, keys: Iterable[object]) -> int:
        """Delete rows of a table by key (a value for a one-column key, else tuples);
        a key the table does not have is ignored."""
        schema = self.inboxes.schema(check_name(table, "table"), what="table")
        key = tables.key_of(schema)
        tables.refuse_tracked(schema)
        return tables.load_changes(self.conn, schema.name, "delete", key, keys)

    def track(self, source: str, name: str | None = None, method: str = "trigger"
              ) -> StreamSchema:
        """Make the ordinary table `source` (e.g. "public.orders") an argus table `name`
        (default: its own name) that follows its inserts, updates and deletes, captured
        by triggers in the writers' transactions, or read from a logical replication
        slot by each cycle (method "slot", wal_level = logical) (argus.track)."""
        if not self.owner:
            raise PermissionDeniedError("only a member of argus's owner role tracks tables")
        return track.track(self.conn, source, name, method)

    def untrack(self, name: str) -> str:
        """Stop following the table's source (its triggers go; the table and its queries
        stay, loadable directly). Returns the source's name."""
        if not self.owner:
            raise PermissionDeniedError("only a member of argus's owner role untracks tables")
        source = track.untrack(self.conn, name)
        self.inboxes.schema(check_name(name, "table"), fresh=True)  # loadable again
        return source

    def resync(self, name: str) -> int:
        """Compare the table's source with argus's rows and queue what differs as
        changes, claimed by the next cycle: after the source was rewritten in place
        (ALTER TABLE … TYPE … USING), which a cycle's warning says. The source is read by
        COPY, as this session's role, which must be able to read it. How many changes."""
        if not self.owner:
            raise PermissionDeniedError("only a member of argus's owner role resyncs tables")
        return track.resync(self.conn, name, self.dsn)

    def tracked(self) -> dict[str, str]:
        """Each table that follows a source, and that source."""
        return track.tracked(self.conn)

    def distribute(self, stream: str, column: str, shards: int | None = None) -> None:
        """On a Citus coordinator: shard the stream's history over the workers by
        `column`, into `shards` shards (two a worker by default), and the nodes over it
        that can be (argus.citus)."""
        if not self.owner:
            raise PermissionDeniedError("only a member of argus's owner role distributes "
                                        "streams")
        citus.distribute(self.conn, stream, column, shards)
        self.__dict__.pop("_on_citus", None)  # (reads check their query apart on Citus)

    def replicate(self, stream: str) -> None:
        """On a Citus coordinator: copy the stream's history to every node (a reference
        table), so that the nodes joining it with distributed streams are sharded too
        (argus.citus)."""
        if not self.owner:
            raise PermissionDeniedError("only a member of argus's owner role replicates "
                                        "streams")
        citus.replicate(self.conn, stream)
        self.__dict__.pop("_on_citus", None)

    def replicated(self) -> list[str]:
        """The streams whose history is copied to every node (on Citus)."""
        return citus.replicated(self.conn)

    def distributed(self) -> dict[str, str]:
        """Each stream whose history is distributed (on Citus), and by which column."""
        return citus.distributed(self.conn)

    def drop_stream(self, name: str) -> None:
        if not self.owner:
            return requests.submit(self.conn, "drop_stream", name, {})
        streams.drop_stream(self.conn, name)
        slot.drop_unused(self.conn)  # when it was the last table a slot followed

    def streams(self) -> list[StreamSchema]:
        return list(streams.stream_schemas(self.conn).values())

    def insert(self, stream: str, rows: Iterable[object], load_id: str | None = None) -> int:
        """COPY rows (tuples in column order, or dicts) into the stream's inbox, all or
        none. With a load_id the load happens at most once: loading the same id again
        loads nothing and returns 0 (see `load` for the details)."""
        return self.inboxes.load(stream, rows, load_id).rows

    def load(self, stream: str, rows: Iterable[object], load_id: str | None = None
             ) -> load_ops.LoadResult:
        return self.inboxes.load(stream, rows, load_id)

    def loads(self) -> list[tuple]:
        return self.conn.execute("SELECT load_id, stream, rows, source, loaded_at "
                                 "FROM argus_catalog.loads ORDER BY loaded_at").fetchall()

    # -- queries ---------------------------------------------------------------

    def register_query(self, name: str, sql_text, force: bool = False,
                       evaluate: str = "incremental") -> QueryInfo:
        """Register a continuous query, backfilled from the streams' histories. A query
        whose state PostgreSQL estimates above the setting max_query_state is refused,
        unless `force`. `evaluate='rerun'`: one node re-runs it in each cycle that
        brings its streams rows, instead of its incremental nodes. `sql_text` may be an
        SQLAlchemy Core or ORM select (written with its values as literals)."""
        if alchemy.is_clause(sql_text):
            sql_text = alchemy.sql_of(sql_text)
        if not self.owner:
            if force:
                raise requests.forcing_refused(name)
            requests.submit(self.conn, "register", name, {"sql": sql_text, "evaluate": evaluate})
            return registry.readable_info(self.conn, name, sql_text)
        return registry.register(self.conn, name, sql_text, self.sharing, force,
                                 evaluate=evaluate)

    def preview_query(self, name: str, sql_text, force: bool = False,
                      evaluate: str = "incremental") -> tuple[QueryInfo, str]:
        """What register_query would do, with nothing kept: the query's info (its
        nodes, `created` for each it would make) and its explain text (what each node
        would compute, keep and cost), as if registered; then rolled back. For argus's
        owner (a registrar's registration is a request a worker carries out)."""
        if alchemy.is_clause(sql_text):
            sql_text = alchemy.sql_of(sql_text)
        if not self.owner:
            raise PermissionDeniedError(
                f"previewing query {name!r} needs argus's owner: a registrar's registration "
                "is a request that argus's worker carries out (argus worker)")
        return registry.preview(self.conn, name, sql_text, self.sharing, force,
                                evaluate=evaluate)

    def unregister_query(self, name: str) -> None:
        if not self.owner:
            return requests.submit(self.conn, "unregister", name, {})
        registry.unregister(self.conn, name)

    def process_requests(self, seconds: float | None = None, pause: bool = False
                         ) -> list[requests.Outcome]:
        """Carry out the registrars' pending requests (as the owner); `seconds`: start
        none after that long; `pause`: after each that held the cycle lock a while, leave
        it free as long (requests.process)."""
        if not self.owner:
            raise PermissionDeniedError("only a member of argus's owner role carries out "
                                        "requests")
        return requests.process(self.conn, self.sharing, seconds, pause)

    # -- roles -------------------------------------------------------------------

    def grant(self, group: str, role: str, query: str | None = None,
              stream: str | None = None) -> None:
        """Let `role` be a reader (of every query, of `query`, or of `stream`'s
        history), a writer (of every stream or of `stream`) or a registrar."""
        roles.grant(self.conn, group, role, query=query, stream=stream)

    def revoke(self, group: str, role: str, query: str | None = None,
               stream: str | None = None) -> None:
        roles.revoke(self.conn, group, role, query=query, stream=stream)

    def privileges(self) -> list[tuple[str, str, str]]:
        """Who may do what: (role, kind, on what)."""
        return roles.privileges(self.conn)

    def queries(self) -> list[QueryInfo]:
        names = [r[0] for r in self.conn.execute(
            "SELECT name FROM argus_catalog.queries ORDER BY name")]
        return [registry.query_info(self.conn, n) for n in names]

    def query(self, name: str) -> QueryInfo:
        return registry.query_info(self.conn, name)

    # -- cycles and results ----------------------------------------------------

    def run(self, wait: bool = True) -> CycleReport:
        """Run one cycle. With wait=False, raise CycleInProgressError instead of waiting
        for a cycle that another process is running."""
        # (a role argus granted vacuums nothing of the owner's: no look for grown tables,
        # two round trips, after each of its cycles)
        return cycle.run(self.conn, wait=wait, tidy_up=self.owner)

    def results(self, name: str, limit: int | None = None) -> list[tuple]:
        """The query's current answer, or `limit` rows of it (QueryFailedError for a
        query isolated after a failure: see `retry`)."""
        return self._read(results_view, name, limit)

    def new_results(self, name: str, limit: int | None = None) -> list[tuple]:
        """The last cycle's changes to the answer (or `limit` of them): each row with its
        sign (+1 inserted, -1 retracted) as the last element."""
        return self._read(changes_view, name, limit)

    def subscribe(self, name: str, consumer: str | None = None, since: int | None = None,
                  timeout: float | None = None) -> Iterator[subscriptions.Changes]:
        """Query `name`'s answer, then each committed cycle's changes to it, in order
        (argus.subscriptions): `for changes in db.subscribe("big"): ...`."""
        return subscriptions.subscribe(self.dsn, name, consumer, since, timeout)

    def acknowledge(self, name: str, consumer: str, position: int) -> None:
        """Consumer `consumer` of query `name` has every change up to `position`."""
        subscriptions.acknowledge(self.conn, name, consumer, position)

    def count_results(self, name: str, changes: bool = False) -> int:
        """How many rows the answer (or the last cycle's changes) holds, read in place."""
        registry.check_ok(self.conn, name)
        view = (changes_view if changes else results_view)(check_name(name, "query"))
        return self.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(view)).fetchone()[0]

    def _read(self, view, name: str, limit: int | None) -> list[tuple]:
        return reading.read(self.conn, view, name, limit, self._on_citus)

    @functools.cached_property
    def _on_citus(self) -> bool:
        return placement.installed(self.conn)

    @functools.cached_property
    def engine(self):
        """An SQLAlchemy Engine on this database (SQLAlchemy installed)."""
        return alchemy.engine_for(self.dsn)

    def results_table(self, name: str):
        """The query's answer as a reflected SQLAlchemy Table (its view), to select,
        join and filter: `pd.read_sql(db.results_table("big").select(), db.engine)`."""
        registry.check_ok(self.conn, name)
        return alchemy.reflected(self.engine, RESULTS_SCHEMA, check_name(name, "query"))

    def changes_table(self, name: str):
        """The query's last changes as a reflected SQLAlchemy Table (argus_sign last)."""
        registry.check_ok(self.conn, name)
        return alchemy.reflected(self.engine, CHANGES_SCHEMA, check_name(name, "query"))

    def retry(self, name: str) -> QueryInfo:
        """Put a query isolated after a failure back into the cycles, rebuilt from its
        inputs' histories (QueryError, and nothing changed, if it still fails)."""
        return registry.retry(self.conn, name)

    # -- the quarantine ----------------------------------------------------------

    def quarantined(self, stream: str | None = None, limit: int | None = None) -> list[tuple]:
        """Rows a cycle held back (an event time too far ahead of the server's clock):
        (id, stream, row as a dict, reason, held_at); the first `limit` of them."""
        return quarantine.rows(self.conn, stream, limit)

    def quarantine_summary(self, stream: str | None = None) -> list[tuple]:
        """Per stream: (stream, rows held, earliest and latest event time, first and last
        held at, reasons)."""
        return quarantine.summary(self.conn, stream)

    def release_quarantine(self, stream: str | None = None,
                           ids: Iterable[int] | None = None) -> int:
        """Return quarantined rows to their inboxes (all, a stream's, or by id); the next
        cycle claims them — and holds them back again if they are still too far ahead:
        raise `max_clock_lead` first (`configure`) if their times are right."""
        return quarantine.release(self.conn, stream, ids)

    def explain(self, name: str, code: bool = False) -> str:
        """Query `name`'s nodes: what each computes, keeps and costs (with `code`, the
        SQL each runs)."""
        from .explain import explain

        return explain(self.conn, name, code)

    # -- settings --------------------------------------------------------------

    def optimize(self, dry_run: bool = True) -> list:
        """What the layout rules would change in the network today (argus.optimize:
        tables that would be views, and the reverse)."""
        from .optimize import proposals

        return proposals(self.conn)

    def migrate(self, names: Iterable[str] | None = None, *, force: bool = False,
                dry_run: bool = False, evaluate: str | None = None) -> list:
        """Plan each query again on what the cycles observed — incremental or re-run
        (settings.rerun_fallback), and its joins — and move those that gain to their new
        layout between two cycles (argus.adapt); `dry_run`: decide only; `force`: move
        to the cheapest other join order whatever it saves; `evaluate`: move them to
        that evaluation ('incremental', 'rerun'), which then sticks."""
        from . import adapt

        return adapt.optimize(self.conn, None if names is None else list(names),
                              force=force, apply=not dry_run, evaluate=evaluate)

    def estimate_accuracy(self) -> list:
        """Per node kind, how the join order's estimates compare with what the cycles
        measured (argus.optimize.accuracy)."""
        from .optimize import accuracy

        return accuracy(self.conn)

    def settings(self) -> dict[str, object]:
        """This database's argus settings (argus.settings.SETTINGS says what each does)."""
        return settings.get(self.conn)

    def configure(self, **values: object) -> dict[str, object]:
        """Change settings, e.g. configure(maintenance="rebuild"); all or none."""
        if "durability" in values:  # (what a crash emptied is rebuilt before it is kept)
            network.rebuild_if_lost(self.conn)
        with self.conn.transaction():
            changed = settings.configure(self.conn, **values)
            if "durability" in values:
                network.persist(self.conn)
        cycle.forget(self.conn)  # (node_timeout is read once per connection)
        return changed

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        if "engine" in self.__dict__:  # (created when asked for)
            self.engine.dispose()
        self.conn.close()

    def __enter__(self) -> Argus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
