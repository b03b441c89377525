"""The `argus` command line."""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__, citus
from .errors import ArgusError, CycleInProgressError
from .mqo.sharing import STRATEGIES
from .nodes import KINDS



def _console(stderr: bool = False) -> Console:
    """Wrapped to the terminal's width; written to a file or a pipe, never wrapped (a
    Markdown table, a message in a log, a DSN stay whole)."""
    terminal = (sys.stderr if stderr else sys.stdout).isatty()
    return Console(stderr=stderr, soft_wrap=not terminal,
                   width=None if terminal else 1_000_000)


console = _console()
err_console = _console(stderr=True)


def dsn_option(command):
    """--dsn, and -d/--database: another database on the same server (the embedded
    one by default), e.g. `argus status -d argus_demo`."""
    @click.option("--database", "-d", default=None, metavar="NAME",
                  help="A database on the same server (default server: the embedded one), "
                       "e.g. argus_demo.")
    @click.option("--dsn", envvar="ARGUS_DSN", default=None, metavar="DSN",
                  help="PostgreSQL connection string (default: $ARGUS_DSN, else the "
                       "embedded server).")
    @functools.wraps(command)
    def with_dsn(*args, dsn: str | None = None, database: str | None = None, **kwargs):
        if database:
            from psycopg.conninfo import make_conninfo

            from .api import resolve_dsn

            dsn = make_conninfo(resolve_dsn(dsn), dbname=database)
        return command(*args, dsn=dsn, **kwargs)
    return with_dsn


def handle_errors(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ArgusError as exc:
            err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
            sys.exit(1)
    return wrapper


def _connect(dsn: str | None, sharing: str | None = None):
    from .api import connect

    return connect(dsn, sharing)


class _Said(logging.Handler):
    """argus's log messages (a rebuild's progress) on the terminal, as the rest."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(f"[dim]{escape(record.getMessage())}[/]", highlight=False)


@click.group()
@click.version_option(__version__, prog_name="argus")
def main() -> None:
    """argus: incremental continuous queries on PostgreSQL."""
    logger = logging.getLogger("argus")
    if not any(isinstance(h, _Said) for h in logger.handlers):
        logger.addHandler(_Said())
        logger.setLevel(logging.INFO)


@main.command()
@dsn_option
@handle_errors
def init(dsn: str | None) -> None:
    """Create (or upgrade) the argus catalog in the database."""
    from .catalog import installed_version

    with _connect(dsn) as db:
        console.print(f"argus catalog version {installed_version(db.conn)} ready in "
                      f"database {db.conn.info.dbname!r} on {db.conn.info.host}:"
                      f"{db.conn.info.port}")


# -- streams -------------------------------------------------------------------------

@main.group()
def stream() -> None:
    """Create, list and drop streams."""


@stream.command("create")
@click.argument("name")
@click.argument("columns", nargs=-1, required=True, metavar="COLUMN:TYPE...")
@click.option("--time-column", default=None, help="The stream's event-time column.")
@click.option("--if-not-exists", is_flag=True,
              help="Keep a stream declared so already (one declared otherwise is refused).")
@dsn_option
@handle_errors
def stream_create(name: str, columns: tuple[str, ...], time_column: str | None,
                  if_not_exists: bool, dsn: str | None) -> None:
    """Create stream NAME of COLUMN:TYPE columns.

    For example: `argus stream create transfers tran_id:bigint tran_date:date
    'amount:numeric(14,2)' --time-column tran_date`."""
    with _connect(dsn) as db:
        db.create_stream(name, _column_spec(columns), time_column=time_column,
                         if_not_exists=if_not_exists)
        console.print(f"stream {name} created; load rows into argus_inbox.{name.lower()}")


def _column_spec(columns: tuple[str, ...]) -> dict[str, str]:
    spec = {}
    for column in columns:
        col, sep, typ = column.partition(":")
        if not sep:
            raise click.BadParameter(f"{column!r}: write columns as name:type",
                                     param_hint="COLUMNS")
        spec[col] = typ
    return spec


@main.group()
def table() -> None:
    """Create tables: inputs whose rows are inserted, updated and deleted by a key."""


@table.command("create")
@click.argument("name")
@click.argument("columns", nargs=-1, required=True, metavar="COLUMN:TYPE...")
@click.option("--key", "key", required=True, help="The primary key's columns, e.g. id or a,b.")
@dsn_option
@handle_errors
def table_create(name: str, columns: tuple[str, ...], key: str, dsn: str | None) -> None:
    """Create table NAME of COLUMN:TYPE columns, changed by its --key.

    For example: `argus table create accounts id:bigint customer:text
    'balance:numeric(12,2)' --key id`. Its changes go into argus_inbox.NAME: a row per
    change, argus_op 'i' (insert, the default), 'u' (update by key) or 'd' (delete)."""
    with _connect(dsn) as db:
        db.create_table(name, _column_spec(columns), primary_key=key.split(","))
        console.print(f"table {name} created; load changes into argus_inbox.{name.lower()} "
                      "(argus_op: i, u or d)")


@main.command("track")
@click.argument("source")
@click.option("--as", "name", default=None,
              help="The argus table's name (default: the source's own name).")
@click.option("--method", type=click.Choice(["trigger", "slot"]), default="trigger",
              show_default=True,
              help="trigger: statement triggers write each change in the writer's "
                   "transaction; slot: each cycle reads a logical replication slot (needs "
                   "wal_level = logical and a REPLICATION role; the writers pay only WAL).")
@dsn_option
@handle_errors
def track_command(source: str, name: str | None, method: str, dsn: str | None) -> None:
    """Follow the ordinary table SOURCE (e.g. public.orders): an argus table of its
    columns and key, filled with its rows now and changed by every INSERT, UPDATE,
    DELETE and TRUNCATE on it from then on. Needs a primary key and the table owner's
    rights."""
    with _connect(dsn) as db:
        schema = db.track(source, name, method)
        console.print(f"table {schema.name} follows {schema.source} "
                      f"(key: {', '.join(schema.primary_key)}); its rows reach the queries "
                      "at the next cycle")


@main.command("untrack")
@click.argument("name")
@dsn_option
@handle_errors
def untrack_command(name: str, dsn: str | None) -> None:
    """Stop following NAME's source: its triggers (or its place in the replication slot)
    go; the table and its queries stay."""
    with _connect(dsn) as db:
        source = db.untrack(name)
        console.print(f"table {name} no longer follows {source}; its rows and queries stay")


@stream.command("list")
@dsn_option
@handle_errors
def stream_list(dsn: str | None) -> None:
    """List streams and their columns."""
    with _connect(dsn) as db:
        listed = Table("stream", "columns", "time column", "key")
        tracked, sharded, copied = db.tracked(), db.distributed(), db.replicated()
        for s in db.streams():
            key = ", ".join(s.primary_key) if s.primary_key else "(insert-only)"
            listed.add_row(s.name, ", ".join(f"{c} {t}" for c, t in s.columns),
                           s.time_column or "",
                           key + (f" (follows {tracked[s.name]})" if s.name in tracked else "")
                           + (f" (distributed by {sharded[s.name]})" if s.name in sharded
                              else "")
                           + (" (copied to every Citus node)" if s.name in copied else ""))
        console.print(listed)


@stream.command("distribute")
@click.argument("name")
@click.argument("column")
@click.option("--shards", type=click.IntRange(1, citus.MAX_SHARDS), default=None,
              help="how many shards (default: two a worker)")
@dsn_option
@handle_errors
def stream_distribute(name: str, column: str, shards: int | None, dsn: str | None) -> None:
    """On a Citus coordinator: shard stream NAME's history over the workers by COLUMN,
    and the nodes over it that can be."""
    with _connect(dsn) as db:
        db.distribute(name, column, shards)
        console.print(f"stream {name}'s history is distributed by {column}")


@stream.command("replicate")
@click.argument("name")
@dsn_option
@handle_errors
def stream_replicate(name: str, dsn: str | None) -> None:
    """On a Citus coordinator: copy stream NAME's history to every node (a reference
    table, for small streams), so that the nodes joining it with distributed streams
    are sharded too."""
    with _connect(dsn) as db:
        db.replicate(name)
        console.print(f"stream {name}'s history is copied to every Citus node")


@stream.command("drop")
@click.argument("name")
@dsn_option
@handle_errors
def stream_drop(name: str, dsn: str | None) -> None:
    """Drop stream NAME (refused while queries use it)."""
    with _connect(dsn) as db:
        db.drop_stream(name)
        console.print(f"stream {name} dropped")


# -- queries -------------------------------------------------------------------------

@main.command()
@click.argument("name")
@click.option("--sql", "sql_text", default=None, help="The query's SQL.")
@click.option("-f", "--file", "path", type=click.Path(exists=True, dir_okay=False,
                                                       path_type=Path),
              help="A file holding the query's SQL ('-' for stdin).")
@click.option("--sharing", type=click.Choice(STRATEGIES), default=None,
              help="How to share the network's nodes (default $ARGUS_SHARING, else "
                   "selection).")
@click.option("--force", is_flag=True,
              help="Register even if its estimated state exceeds max_query_state.")
@click.option("--rerun", is_flag=True,
              help="Evaluate it by re-running it in each cycle that brings its streams rows, "
                   "not incrementally (cheap queries over small streams).")
@dsn_option
@handle_errors
def register(name: str, sql_text: str | None, path: Path | None, sharing: str | None,
             force: bool, rerun: bool, dsn: str | None) -> None:
    """Register continuous query NAME."""
    if (sql_text is None) == (path is None):
        raise click.UsageError("give the query with exactly one of --sql or -f FILE")
    text = sql_text if sql_text is not None else path.read_text()
    with _connect(dsn, sharing) as db:
        info = db.register_query(name, text, force=force,
                                 evaluate="rerun" if rerun else "incremental")
        created = [n.id for n in info.nodes if n.created]
        shared = [n.id for n in info.nodes if not n.created and not KINDS[n.kind].loaded]
        console.print(f"query {info.name} registered: {len(db.results(info.name))} rows now; "
                      f"nodes created {created or 'none'}, shared {shared or 'none'}; "
                      f"answer in argus_results.{info.name}")


@main.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--stream", required=True, help="The stream to load into.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "json"]), default=None,
              help="File format (default: from the file name).")
@click.option("--header/--no-header", default=True, show_default=True,
              help="CSV: the first line names the columns.")
@click.option("--load-id", default=None,
              help="Loads with the same id happen once (default: a SHA-256 digest of the "
                   "content).")
@click.option("--engine", type=click.Choice(["auto", "local", "spark"]), default="auto",
              show_default=True,
              help="local: PostgreSQL's COPY (CSV only, a stream's rows); spark: Spark over "
                   "JDBC; auto: local for CSV, Spark for the rest.")
@click.option("--master", default=None, help="Spark master URL (default: local[2]).")
@click.option("--batch-size", default=10_000, show_default=True, help="JDBC batch size.")
@dsn_option
@handle_errors
def load(path: Path, stream: str, fmt: str | None, header: bool, load_id: str | None,
         engine: str, master: str | None, batch_size: int, dsn: str | None) -> None:
    """Load a CSV, Parquet or JSON file (or a directory of them) into STREAM, exactly
    once: CSV by COPY, the others with Spark."""
    fmt = (fmt or _format_of(path) or ("csv" if engine == "local" else "parquet")).lower()
    if engine == "local" and fmt != "csv":
        raise ArgusError(f"--engine local loads CSV only, not {fmt}: use --engine spark")
    if engine != "spark" and fmt == "csv":
        from .files import load_csv

        def say(message: str) -> None:
            err_console.print(f"[dim]{escape(message)}[/]")

        with _connect(dsn) as db:
            done = load_csv(db.conn, path, stream, header, load_id, progress=say)
        for file, _ in done.skipped:
            console.print(f"{file} was loaded before: skipped")
        if done.loaded or not done.skipped:
            console.print(f"{done.rows:,} rows loaded into {done.stream}; the next cycle "
                          "claims them")
        return
    from .spark import load_file

    result = load_file(str(path), stream, dsn, fmt=fmt, header=header, load_id=load_id,
                       master=master, batch_size=batch_size,
                       progress=lambda message: err_console.print(f"[dim]{message}[/]"))
    if result.duplicate:
        console.print(f"load {result.load_id} was loaded before: nothing loaded")
    else:
        console.print(f"{result.rows:,} rows loaded into {result.stream} "
                      f"(load id {result.load_id}); the next cycle claims them")


def _format_of(path: Path) -> str | None:
    """A file's format by its suffix; a directory's, when all its files share one."""
    from .files import data_files

    suffixes = {p.suffix for p in data_files(path)} if path.is_dir() else {path.suffix}
    if len(suffixes) != 1:
        return None
    return suffixes.pop().lstrip(".") or None


@main.command()
@click.argument("name")
@dsn_option
@handle_errors
def drop(name: str, dsn: str | None) -> None:
    """Drop query NAME and the nodes no other query needs."""
    with _connect(dsn) as db:
        db.unregister_query(name)
        console.print(f"query {name} dropped")


@main.command()
@click.option("--wait/--no-wait", default=False,
              help="Wait for a running cycle instead of skipping (default: skip).")
@click.option("--log", type=click.Path(path_type=Path), default=None,
              help="Also append one timestamped line to this file (rotated at 1 MB).")
@click.option("--every", default=None, metavar="DURATION",
              help="Go on running a cycle every 10s, 5m, ... in this one session, until "
                   "interrupted (a session keeps the compiled network: each cycle after the "
                   "first costs less than a new `argus run`'s).")
@click.option("--cycles", type=click.IntRange(min=1), default=None,
              help="With --every: stop after this many cycles (failed ones count).")
@click.option("--follow", is_flag=True,
              help="Go on running a cycle as soon as rows arrive (woken by each load's "
                   "notification), and carrying out registrars' requests as they come.")
@click.option("--min-interval", type=click.FloatRange(min=0), default=0.0, show_default=True,
              metavar="SECONDS",
              help="With --follow: at most one cycle per this many seconds (loads in "
                   "between wait for the next one).")
@dsn_option
@handle_errors
def run(wait: bool, log: Path | None, every: str | None, cycles: int | None, follow: bool,
        min_interval: float, dsn: str | None) -> None:
    """Run one cycle: claim new rows, update every query, report. Exit status 3 when a
    query failed in it and was isolated (the others went on), 1 when the cycle failed."""
    from .schedule import interval

    if follow:
        if every is not None:
            raise ArgusError("--follow and --every are two ways to go on: choose one")
        _run_follow(dsn, min_interval, log)
        return
    if every is None:
        if cycles is not None:
            raise ArgusError("--cycles goes with --every")
        with _connected(dsn, log) as db:
            if _run_once(db, wait, log):
                sys.exit(ISOLATED)
        return
    _run_every(dsn, interval(every), cycles, wait, log)


ISOLATED = 3  # argus run's exit status when a query was isolated in the cycle


def _connected(dsn: str | None, log: Path | None):
    """_connect, with a failure (the server down, say) in the cycle log too: cron's
    cycles fail where docs/pipeline.md says they log."""
    from .schedule import log_cycle, tag

    try:
        return _connect(dsn)
    except ArgusError as exc:
        if log:
            log_cycle(log, tag(dsn) if dsn else "embedded", f"failed: {exc}")
        raise


def _run_follow(dsn: str | None, min_seconds: float, log: Path | None) -> None:
    """A cycle whenever a load commits (LISTEN argus_rows), at most one per
    `min_seconds`; requests as they come (argus_requests). Ctrl-C or SIGTERM stop it."""
    import signal
    import time

    import psycopg

    def stop(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with _connect(dsn) as db, psycopg.connect(db.dsn, autocommit=True) as listener:
            listener.execute("LISTEN argus_rows")
            listener.execute("LISTEN argus_requests")
            console.print("following: a cycle whenever rows arrive (Ctrl-C stops)")
            last = float("-inf")
            while True:
                time.sleep(max(0.0, min_seconds - (time.monotonic() - last)))
                last = time.monotonic()
                try:
                    _run_once(db, True, log)
                except ArgusError as exc:  # a failed cycle: its rows wait for the next
                    err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
                for _ in listener.notifies(stop_after=1):
                    pass
    except KeyboardInterrupt:
        err_console.print("stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_every(dsn: str | None, seconds: int, cycles: int | None, wait: bool,
               log: Path | None) -> None:
    """Cycles one `seconds` after the start of the last, in one session (reopened when the
    server goes away). Ctrl-C or SIGTERM stop it between cycles; one cut short rolls back
    like any failed cycle."""
    import signal
    import threading
    import time

    import psycopg

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    done, db = 0, None
    try:
        while not stop.is_set() and (cycles is None or done < cycles):
            started = time.monotonic()
            try:
                db = db or _connect(dsn)
                _run_once(db, wait, log)
            except (ArgusError, psycopg.OperationalError) as exc:
                err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
                if db is not None and db.conn.closed:
                    db = None  # reconnect at the next cycle
            done += 1
            if cycles is None or done < cycles:
                stop.wait(max(0.0, seconds - (time.monotonic() - started)))
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if db is not None:
            db.close()


def _run_once(db, wait: bool, log: Path | None) -> bool:
    """One cycle and its report; whether a query was isolated in it."""
    from .schedule import log_cycle, tag

    if db.owner:
        _report_requests(db.process_requests())
    try:
        report = db.run(wait=wait)
    except CycleInProgressError as exc:
        err_console.print(f"skipped: {exc}")
        if log:
            log_cycle(log, tag(db.dsn), "skipped: another cycle was running")
        return False
    except ArgusError as exc:
        if log:
            log_cycle(log, tag(db.dsn), f"failed: {exc}")
        raise
    rows_in = ", ".join(f"{s} {n:,}" for s, n in report.rows_in.items()) or "no streams"
    changed = {q: n for q, n in report.new_rows.items() if n or report.retracted[q]}
    summary = (f"run {report.run_id}: {report.total_in:,} rows in ({rows_in}); "
               f"{report.nodes_run} nodes evaluated; {report.seconds * 1000:.1f} ms")
    if log:
        log_cycle(log, tag(db.dsn), summary + "".join(
            f"; isolated {q}: {e}" for q, e in report.failed.items()))
    console.print(summary)
    for query, n in sorted(changed.items()):
        console.print(f"  {query}: +{n:,} -{report.retracted[query]:,}")
    for query in report.deferred:
        console.print(f"  {query}: changes computed when read (argus_changes.{query})")
    for stream, n in report.quarantined.items():
        err_console.print(f"[yellow]held back:[/] {n:,} rows of {stream} (event time too far "
                          "ahead of the server's clock): see argus quarantine", highlight=False)
    for query, error in report.failed.items():
        err_console.print(f"[red]isolated:[/] query {query} failed: {escape(error)}; the "
                          f"others went on (argus retry {query})", highlight=False)
    for d in report.migrations:  # (the periodic re-plan: settings.reoptimize_every)
        if d.migrated:
            console.print(f"  migrated {d.query}: " + "; ".join(
                f"{a} → {b}" for a, b in d.prediction.trees) + f" ({d.build_ms:,.0f} ms)")
        elif not d.query:  # the re-plan itself failed; the cycle stands
            err_console.print(f"[yellow]re-plan:[/] {escape(d.why)}", highlight=False)
    if log and any(d.migrated for d in report.migrations):
        log_cycle(log, tag(db.dsn), "migrated " + ", ".join(
            d.query for d in report.migrations if d.migrated))
    return bool(report.failed)


def _report_requests(outcomes) -> None:
    for o in outcomes:
        if o.status == "done":
            console.print(f"request {o.request_id} of {o.requested_by}: {o.kind} {o.name} done")
        else:
            err_console.print(f"[red]request {o.request_id} of {o.requested_by} refused:[/] "
                              f"{escape(str(o.error))}", highlight=False)


@main.command()
@click.option("--once", is_flag=True, help="Carry out the pending requests, then stop.")
@dsn_option
@handle_errors
def worker(once: bool, dsn: str | None) -> None:
    """Carry out registrars' requests (create streams, register and drop queries) as
    the owner, as they come; run it as a member of the database's owner role."""
    with _connect(dsn) as db:
        if not db.owner:
            raise click.UsageError("argus worker runs as a member of the owner role")
        _report_requests(db.process_requests())
        if once:
            return
        db.conn.execute("LISTEN argus_requests")
        console.print("waiting for requests (Ctrl-C stops)")
        while True:
            for _ in db.conn.notifies(timeout=5.0, stop_after=1):
                pass
            _report_requests(db.process_requests())


def grant_arguments(command):
    """GROUP ROLE [--query Q | --stream S] [--dsn], for grant and revoke."""
    for decorate in reversed([
            click.argument("group", type=click.Choice(["reader", "writer", "registrar"])),
            click.argument("role"),
            click.option("--query", default=None,
                         help="reader: only this query's answer and changes."),
            click.option("--stream", default=None,
                         help="reader: this stream's history; writer: only this stream's inbox."),
            dsn_option, handle_errors]):
        command = decorate(command)
    return command


@main.command()
@grant_arguments
def grant(group: str, role: str, query: str | None, stream: str | None, dsn: str | None) -> None:
    """Let ROLE read, write or register (see docs/security.md)."""
    with _connect(dsn) as db:
        db.grant(group, role, query=query, stream=stream)
        what = f"query {query}" if query else f"stream {stream}" if stream else "everything"
        console.print(f"{role} is a {group} of {what}")


@main.command()
@grant_arguments
def revoke(group: str, role: str, query: str | None, stream: str | None, dsn: str | None) -> None:
    """Take back what `argus grant` gave."""
    with _connect(dsn) as db:
        db.revoke(group, role, query=query, stream=stream)
        what = f" of query {query}" if query else f" of stream {stream}" if stream else ""
        console.print(f"{role} is no longer a {group}{what}")


@main.command()
@click.argument("name")
@dsn_option
@handle_errors
def retry(name: str, dsn: str | None) -> None:
    """Put query NAME, isolated after a failure, back into the cycles (rebuilt)."""
    with _connect(dsn) as db:
        info = db.retry(name)
        console.print(f"query {info.name} is back: {db.count_results(info.name):,} rows now")


@main.group(invoke_without_command=True)
@click.option("--stream", default=None, help="Only this stream's rows.")
@click.option("--limit", default=0, show_default=True, help="Also list the first N rows held.")
@dsn_option
@click.pass_context
@handle_errors
def quarantine(ctx: click.Context, stream: str | None, limit: int, dsn: str | None) -> None:
    """Rows held back because their event time was too far ahead of the server's clock:
    a summary per stream, and with --limit N the first N rows."""
    if ctx.invoked_subcommand is not None:  # `release` reads the group's options too
        ctx.obj = {"stream": stream, "dsn": dsn}
        return
    with _connect(dsn) as db:
        held = db.quarantine_summary(stream)
        rows = db.quarantined(stream, limit) if limit else []
    table = Table("stream", "rows held", "event times", "held", "reasons",
                  title=f"quarantine: {sum(h[1] for h in held):,} rows", title_justify="left")
    for name, count, first, last, since, until, reasons in held:
        table.add_row(name, f"{count:,}", f"{first} … {last}", f"{since:%Y-%m-%d %H:%M} … "
                      f"{until:%Y-%m-%d %H:%M}", reasons)
    console.print(table)
    if rows:
        table = Table("id", "stream", "row", "reason", "held at",
                      title=f"the first {len(rows):,}", title_justify="left")
        for quarantine_id, name, row, reason, held_at in rows:
            table.add_row(str(quarantine_id), name, str(row), reason, str(held_at))
        console.print(table)


@quarantine.command("release")
@click.option("--stream", default=None, help="Only this stream's rows.")
@click.option("--id", "ids", type=int, multiple=True, help="Only these rows (repeatable).")
@dsn_option
@click.pass_context
@handle_errors
def quarantine_release(ctx: click.Context, stream: str | None, ids: tuple[int, ...],
                       dsn: str | None) -> None:
    """Return held rows to their inboxes; the next cycle claims them (raise
    max_clock_lead first if their event times are right)."""
    group = ctx.obj or {}
    stream, dsn = stream or group.get("stream"), dsn or group.get("dsn")
    with _connect(dsn) as db:
        moved = db.release_quarantine(stream, ids or None)
    console.print(f"{moved} rows returned to their inboxes")


@main.command()
@click.argument("name")
@click.option("--changes", is_flag=True, help="Show the last cycle's changes instead.")
@click.option("--limit", default=50, show_default=True)
@dsn_option
@handle_errors
def results(name: str, changes: bool, limit: int, dsn: str | None) -> None:
    """Print query NAME's current answer (or last changes)."""
    with _connect(dsn) as db:
        columns = [c for c, _ in db.query(name).columns] + (["argus_sign"] if changes else [])
        rows = db.new_results(name, limit) if changes else db.results(name, limit)
        total = db.count_results(name, changes)
    table = Table(*columns, title=f"{name}: {total:,} rows" + (
        f", the first {len(rows):,}" if total > len(rows) else ""), title_justify="left")
    for row in rows:
        table.add_row(*map(str, row))
    console.print(table)


@main.command()
@click.argument("name")
@click.option("--since", type=int, default=None,
              help="Follow from this position (a cycle's run id) instead of printing the "
                   "answer first.")
@click.option("--consumer", default=None,
              help="A name under which argus keeps the position reached, to resume there.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl",
              show_default=True)
@click.option("--timeout", type=float, default=None,
              help="Stop after so many seconds without a change (default: run until Ctrl-C).")
@dsn_option
@handle_errors
def subscribe(name: str, since: int | None, consumer: str | None, fmt: str,
              timeout: float | None, dsn: str | None) -> None:
    """Print query NAME's answer, then each committed cycle's changes to it, as they
    happen, one line per row with its position and sign (+1 in, -1 out)."""
    import csv
    import json

    with _connect(dsn) as db:
        writer, header = csv.writer(sys.stdout), False
        try:
            for changes in db.subscribe(name, consumer, since, timeout):
                names = changes.columns[:-1]
                for *values, sign in changes.rows:
                    if fmt == "jsonl":
                        print(json.dumps({"position": changes.position, "sign": sign,
                                          "row": dict(zip(names, values))}, default=str))
                    else:
                        if not header:
                            writer.writerow(["position", "sign", *names])
                            header = True
                        writer.writerow([changes.position, sign, *values])
                sys.stdout.flush()
        except KeyboardInterrupt:
            pass


@main.command()
@click.argument("name", required=False)
@click.option("--svg", "svg_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the query's nodes as a picture (SVG) to this file.")
@click.option("--audit", is_flag=True,
              help="Run a cycle over a sample of new rows (rolled back) with every statement "
                   "EXPLAIN ANALYZEd, and flag those that read far more than their delta "
                   "(of query NAME's nodes, or all). Needs a superuser's session.")
@click.option("--rows", default="10,1000", show_default=True,
              help="With --audit: the sample's rows per stream, e.g. 10,1000.")
@click.option("--code", is_flag=True, help="Also the SQL each node runs, and the views.")
@dsn_option
@handle_errors
def explain(name: str | None, svg_path: Path | None, audit: bool, rows: str, code: bool,
            dsn: str | None) -> None:
    """Show query NAME's nodes: what each computes, keeps and costs (with --code, the SQL
    each runs; with --svg, draw them; with --audit, what each statement did for its
    delta)."""
    with _connect(dsn) as db:
        if audit:
            from . import audit as node_audit

            flagged = 0
            for size in (int(r) for r in rows.split(",")):
                statements = node_audit.audit(db.conn, size, name)
                flagged += sum(bool(s.flags) for s in statements)
                click.echo(f"── a sample of {size:,} rows per stream ──")
                click.echo(node_audit.report([s for s in statements if s.node_id is not None]))
            if flagged:
                raise click.ClickException(f"{flagged} statements flagged")
            return
        if name is None:
            raise click.UsageError("name a query (or --audit)")
        if svg_path is None:
            click.echo(db.explain(name, code))
            return
        from .picture import of_query

        svg_path.write_text(of_query(db.conn, name))
        console.print(f"query {name}'s nodes drawn in {svg_path}")


@main.command()
@click.option("--dry-run", is_flag=True,
              help="Decide and show, change nothing.")
@click.option("--query", "queries", multiple=True, metavar="NAME",
              help="Only this query (repeatable); default: every query with joins.")
@click.option("--force", is_flag=True,
              help="Migrate to the cheapest other layout whatever it saves (to try "
                   "migrations).")
@click.option("--evaluate", type=click.Choice(["incremental", "rerun"]), default=None,
              help="Migrate the queries to this evaluation; it sticks (the re-run fallback "
                   "leaves them alone after).")
@dsn_option
@handle_errors
def optimize(dry_run: bool, queries: tuple[str, ...], force: bool, evaluate: str | None,
             dsn: str | None) -> None:
    """Plan each query again on what the cycles observed — incremental or re-run, and
    its joins — and migrate those that gain to their new layout, between two cycles
    (Moving State); show which nodes would be views instead of tables, and how far the
    estimates were off."""
    with _connect(dsn) as db:
        decisions = db.migrate(queries or None, force=force, dry_run=dry_run,
                               evaluate=evaluate)
        found = db.optimize()
        accuracy = db.estimate_accuracy()
    if decisions:
        table = Table("query", "migrated" if not dry_run else "would migrate",
                      "join trees: now → new", "row ops/cycle: now → new", "build ms", "why",
                      title="the queries planned again")
        for d in decisions:
            p = d.prediction
            table.add_row(d.query, "yes" if d.migrated else "no",
                          "\n".join(f"{a} → {b}" for a, b in p.trees),
                          "" if p.current is None else f"{p.current:,.0f} → {p.best:,.0f}",
                          "" if d.build_ms is None else f"{d.build_ms:,.0f}", d.why)
        console.print(table)
    if not found:
        console.print("nothing to change: every node is laid out as the settings decide today")
    else:
        table = Table("node", "kind", "change", "why", "frees MiB", "saves ms/cycle",
                      title="tables and views (not migrated yet: register the query again)")
        for p in found:
            table.add_row("" if p.node is None else str(p.node), p.kind, p.change, p.why,
                          "" if p.mib is None else f"{p.mib:,.1f}",
                          "" if p.ms is None else f"{p.ms:,.1f}")
        console.print(table)
    if accuracy:
        table = Table("kind", "nodes", "rows: measured / estimated", "within 2×",
                      "new rows per cycle: measured / estimated", "within 2×",
                      title="the join order's estimates against the cycles (medians)")
        for a in accuracy:
            table.add_row(a.kind, str(a.nodes), f"{a.rows:,.2f}", f"{a.rows_within_2x:.0%}",
                          "" if a.rate is None else f"{a.rate:,.2f}",
                          "" if a.rate_within_2x is None else f"{a.rate_within_2x:.0%}")
        console.print(table)


@main.command()
@click.argument("name", required=False)
@click.argument("value", required=False)
@dsn_option
@handle_errors
def config(name: str | None, value: str | None, dsn: str | None) -> None:
    """Show the database's settings, or set NAME to VALUE."""
    from .settings import EXPERT, SETTINGS

    if name is not None and name not in SETTINGS:
        raise click.UsageError(f"unknown setting {name!r} (settings: {', '.join(SETTINGS)})")
    with _connect(dsn) as db:
        current = db.configure(**{name: value}) if value is not None else db.settings()
    shown = [key for key in SETTINGS if name in (None, key)]
    for title, keys in ((None, [k for k in shown if k not in EXPERT]),
                        ("for experts: tuning whose defaults suit most networks",
                         [k for k in shown if k in EXPERT])):
        if keys:
            table = Table("setting", "value", "what it does", title=title)
            for key in keys:
                table.add_row(key, str(current[key]), SETTINGS[key][1])
            console.print(table)


@main.command()
@dsn_option
@handle_errors
def status(dsn: str | None) -> None:
    """Streams, queries, nodes, sharing and recent cycles."""
    from .status import status_tables

    with _connect(dsn) as db:
        for renderable in status_tables(db.conn):
            console.print(renderable)


@main.command()
@click.option("--cycles", default=5, show_default=True)
@click.option("--history", default=100_000, show_default=True, help="Rows loaded first.")
@click.option("--batch", default=2_000, show_default=True, help="Rows per cycle.")
@click.option("--spark", "use_spark", is_flag=True,
              help="Generate and load the data with Spark (needs the spark extra and Java).")
@click.option("--into", default="argus_demo", show_default=True, metavar="NAME",
              help="The database the demo makes on the server: dropped first if it exists.")
@dsn_option
@handle_errors
def demo(cycles: int, history: int, batch: int, use_spark: bool, into: str,
         dsn: str | None) -> None:
    """Run a demo: transfers, a few queries, several cycles, in a database of its own
    (argus_demo, dropped and made anew, on the server of --dsn or the embedded one)."""
    from psycopg.conninfo import make_conninfo

    from .api import resolve_dsn
    from .demo import run_demo

    admin = make_conninfo(resolve_dsn(dsn), dbname="postgres")
    run_demo(admin, cycles=cycles, history=history, batch=batch, console=console,
             explicit_dsn=bool(dsn), use_spark=use_spark, database=into)


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x.replace("_", "")) for x in text.split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r}: give comma-separated integers") from None


@main.command()
@click.option("--quick", is_flag=True, help="Small data, a few minutes: checks that it runs.")
@click.option("--workload", "workloads",
              type=click.Choice(["transfers", "tpch", "nexmark", "all", "drift"]),
              default="all", show_default=True,
              help="all: transfers, tpch and nexmark; drift: a layout against data that "
                   "drifts, static and adaptive (argus.bench.drift).")
@click.option("--history", type=int, help="Transfers loaded first (default 100,000).")
@click.option("--queries", help="Query counts to measure at, e.g. 100,150,250,500,1000.")
@click.option("--batches", help="Batch sizes, e.g. 100,1000,10000.")
@click.option("--repeat", type=int, help="Batches per measurement (the median is kept).")
@click.option("--tpch-scale", type=float, help="TPC-H scale factor (default 0.1).")
@click.option("--tpch-queries",
              help="TPC-H query numbers, e.g. 1,3,6 (default: all but 17 and 20).")
@click.option("--nexmark-events", type=int,
              help="Nexmark events loaded first (default 100,000).")
@click.option("--per-query", type=int,
              help="Transfer queries compared one by one (0: no query alone, TPC-H's and "
                   "Nexmark's neither).")
@click.option("--register", type=int,
              help="Transfer queries registered one after another, each timed (default 1000).")
@click.option("--durability", type=click.Choice(["derived", "logged"]),
              help="The networks' durability (default: a new database's, derived).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("argus-bench"),
              show_default=True, help="Where bench.md and bench.png are written.")
@dsn_option
@handle_errors
def bench(quick: bool, workloads: str, history: int | None, queries: str | None,
          batches: str | None, repeat: int | None, tpch_scale: float | None,
          tpch_queries: str | None, nexmark_events: int | None, per_query: int | None,
          register: int | None, durability: str | None, out: Path, dsn: str | None) -> None:
    """Benchmark argus against re-running the queries, REFRESH MATERIALIZED VIEW,
    pg_ivm (when installed) and the floor, in one run (database argus_bench)."""
    import dataclasses

    from .bench import Options, run
    from .bench import TPCH_QUERIES

    if workloads == "drift":
        from .bench import drift

        cycles = 30 if quick else 60
        console.print(drift.run(out, dsn, cycles=cycles, log=lambda text: console.print(
            f"[dim]{text}[/]")), markup=False, highlight=False)
        console.print(f"report: {out / 'drift.md'}, plot: {out / 'drift.png'}")
        return
    options = Options.quick(out) if quick else Options(out=out)
    tpch = _ints(tpch_queries) if tpch_queries else None
    unknown = sorted(set(tpch or ()) - set(TPCH_QUERIES))
    if unknown:
        raise click.BadParameter(
            f"TPC-H has no query {', '.join(map(str, unknown))} (its queries are numbered "
            f"{TPCH_QUERIES[0]} to {TPCH_QUERIES[-1]})", param_hint="--tpch-queries")
    changes = {"workloads": Options.workloads if workloads == "all" else (workloads,),
               "history": history, "counts": _ints(queries) if queries else None,
               "sizes": _ints(batches) if batches else None, "repeat": repeat,
               "tpch_scale": tpch_scale, "tpch_queries": tpch, "per_query": per_query,
               "register": register, "nexmark_events": nexmark_events,
               "durability": durability}
    options = dataclasses.replace(options, **{k: v for k, v in changes.items() if v is not None})
    results = run(options, dsn, log=lambda text: console.print(f"[dim]{text}[/]"))
    for notice in results.notices:
        console.print(notice, style="yellow", markup=False)
    console.print((out / "bench.md").read_text(), markup=False, highlight=False)
    console.print(f"report: {out / 'bench.md'}"
                  + (f", plot: {out / 'bench.png'}" if (out / "bench.png").exists() else ""))


# -- data generators -----------------------------------------------------------------

@main.group()
def gen() -> None:
    """Generate data sets for demos and benchmarks (Parquet files)."""


@gen.command("transfers")
@click.option("--rows", default=100_000, show_default=True,
              help="Transfers generated; some large ones are then followed by a transfer "
                   "from their receiver (the chains the demo's queries look for).")
@click.option("--first-id", default=1, show_default=True)
@click.option("--accounts", default=2000, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--master", default=None, help="Spark master URL (default: local[2]).")
@handle_errors
def gen_transfers(rows: int, first_id: int, accounts: int, out: Path, master: str | None) -> None:
    """FedWire-like transfers, generated by a Spark job."""
    from .spark import session
    from .sparkgen import transfers

    spark = session(master, jdbc=False)  # (it writes files: no JDBC driver needed)
    transfers(spark, rows, first_id=first_id, accounts=accounts).write.mode(
        "overwrite").parquet(str(out))
    written = spark.read.parquet(str(out)).count()
    console.print(f"{written:,} transfers written to {out}: {rows:,} and {written - rows:,} "
                  "follow-ups of large ones (load them: argus load --stream transfers "
                  f"{out})")


@gen.command("tpch")
@click.option("--scale", default=0.1, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--batches", default=10, show_default=True, help="Refresh batches.")
@click.option("--share", default=0.001, show_default=True, type=float,
              help="Share of the orders in each refresh batch.")
@click.option("--out", type=click.Path(path_type=Path), required=True)
@handle_errors
def gen_tpch(scale: float, batches: int, share: float, out: Path) -> None:
    """TPC-H tables (DuckDB's generator) and refresh batches of new orders."""
    from .tpch import generate

    data = generate(scale, out, batches, share)
    console.print(f"TPC-H scale {scale}: {len(data.initial)} tables and {len(data.refresh)} "
                  f"refresh batches (orders + lineitem) in {out}")


# -- scheduling ----------------------------------------------------------------------

@main.command()
@click.option("--every", default=None, help="Run a cycle every 5m, 1h, 1d (pg_cron: also 30s).")
@click.option("--cron", "cron_expr", default=None, help="A cron expression instead of --every.")
@click.option("--pg-cron", is_flag=True, help="Schedule inside PostgreSQL with pg_cron.")
@click.option("--log", type=click.Path(path_type=Path), default=None,
              help="Where cron appends each cycle's output (default: in the argus data dir).")
@click.option("--list", "listing", is_flag=True, help="List the scheduled cycles.")
@dsn_option
@handle_errors
def schedule(every: str | None, cron_expr: str | None, pg_cron: bool, log: Path | None,
             listing: bool, dsn: str | None) -> None:
    """Run cycles on a schedule: a crontab entry (or a pg_cron job) per database."""
    from . import schedule as sched
    from .api import resolve_dsn

    if listing:
        table = Table("schedule", "database", "runs", title="scheduled cycles",
                      title_justify="left")
        for entry in sched.entries():
            table.add_row(entry.schedule, entry.target, "cron: argus run")
        if pg_cron:
            for name, expression, database in sched.pg_cron_jobs(resolve_dsn(dsn)):
                table.add_row(expression, database, f"pg_cron job {name}")
        console.print(table)
        return
    target = resolve_dsn(dsn)
    with _connect(target):
        pass  # the catalog exists before anything runs a cycle
    expression = sched.cron_expression(every, cron_expr, seconds_ok=pg_cron)
    if pg_cron:
        job = sched.schedule_pg_cron(target, expression)
        console.print(f"pg_cron job {job} runs SELECT argus.run_cycle() on {expression!r}")
    else:
        entry = sched.schedule_cron(target, expression, log)
        if not sched.cron_running():
            err_console.print("[yellow]warning:[/] no cron daemon runs on this machine: the "
                              "entry does nothing until one does (Debian: apt-get install "
                              "cron, then service cron start)", highlight=False)
        console.print(f"crontab: {entry.schedule} argus run (database {entry.target}); "
                      f"one line per cycle in {log or sched.default_log(entry.target)}")


@main.command()
@click.option("--pg-cron", is_flag=True, help="Remove the pg_cron job instead.")
@dsn_option
@handle_errors
def unschedule(pg_cron: bool, dsn: str | None) -> None:
    """Stop running this database's cycles on a schedule."""
    from . import schedule as sched
    from .api import resolve_dsn

    target = resolve_dsn(dsn)
    removed = sched.unschedule_pg_cron(target) if pg_cron else sched.unschedule_cron(target)
    console.print("unscheduled" if removed else "nothing was scheduled for this database")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (the default: this machine only).")
@click.option("--port", default=8787, show_default=True)
@click.option("--allow-host", "allowed", multiple=True, metavar="NAME",
              help="Another name the page is reached by (its Host header), e.g. the "
                   "machine's name when --host is not this machine only; repeatable.")
@dsn_option
@handle_errors
def dashboard(host: str, port: int, allowed: tuple[str, ...], dsn: str | None) -> None:
    """Serve a page drawing the network, the recent cycles, the queries' answers and the
    waiting and quarantined rows (read-only). It answers only requests naming this
    machine (or --allow-host): a web page elsewhere cannot read it through its name."""
    import socket

    from .api import resolve_dsn
    from .dashboard import LOOPBACK, create_app

    target = resolve_dsn(dsn)
    with _connect(target):  # the catalog is there (and current)
        pass
    hosts = (*LOOPBACK, host, *allowed)
    if host not in LOOPBACK:
        hosts += (socket.gethostname(), socket.getfqdn())
        err_console.print(f"[yellow]warning:[/] the page has no login: whoever reaches "
                          f"{host}:{port} reads every query's answer")
    app = create_app(target, tuple(dict.fromkeys(hosts)))
    try:  # a production WSGI server, not Flask's development one
        from waitress import serve
    except ImportError:
        raise ArgusError("the dashboard needs waitress: pip install -e '.[dashboard]'") from None
    console.print(f"argus dashboard on http://{host}:{port}/ (Ctrl-C stops it)")
    serve(app, host=host, port=port, threads=4, _quiet=True)


# -- the embedded server -------------------------------------------------------------

@main.group()
def server() -> None:
    """The embedded PostgreSQL (used when no DSN is given)."""


@server.command("start")
@handle_errors
def server_start() -> None:
    """Start the embedded server (if it is not running) and print its DSN, password masked."""
    from .embedded import default_server

    s = default_server()
    console.print(f"running: {_masked(s, s.ensure_running())} (password in "
                  f"{s.home / 'server.json'}, data in {s.pgdata})", soft_wrap=True)


def _masked(server, dsn: str) -> str:
    """The server's DSN without its password (a supervisor's log keeps what it prints)."""
    return dsn.replace(server.settings()["password"], "********")


@server.command("stop")
@handle_errors
def server_stop() -> None:
    """Stop the embedded server."""
    from .embedded import default_server

    console.print("stopped" if default_server().stop() else "not running")


@server.command("status")
@handle_errors
def server_status() -> None:
    """Whether the embedded server runs (exit 1 if not), its DSN and data directory."""
    from .embedded import default_server

    s = default_server()
    if s.running():
        console.print(f"running: {_masked(s, s.dsn())} (password in "
                      f"{s.home / 'server.json'}, data in {s.pgdata})", soft_wrap=True)
    else:
        stale = s.stale_pid()
        console.print(f"not running (data in {s.pgdata})"
                      + (f"; its postmaster.pid is stale: {stale}" if stale else ""),
                      soft_wrap=True)
        sys.exit(1)  # (a supervisor's check: not running is a failure)


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@dsn_option
@click.pass_context
@handle_errors
def psql(ctx: click.Context, dsn: str | None) -> None:
    """Open psql on the argus database (the system's psql, else the bundled one).
    Extra arguments go to psql, e.g. `argus psql -d argus_demo -- -c 'SELECT 1'`."""
    from .api import resolve_dsn
    from .embedded import bin_dir

    exe = shutil.which("psql") or str(bin_dir() / "psql")
    os.execv(exe, [exe, resolve_dsn(dsn), *ctx.args])


if __name__ == "__main__":
    main()
