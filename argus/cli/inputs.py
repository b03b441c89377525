"""Commands for the inputs: streams, tables, tracked tables and loads."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ..errors import ArgusError
from .base import connect, console, dsn_option, err_console, handle_errors, main

MAX_SHARDS = 64_000  # citus.MAX_SHARDS, not imported (tests/test_layers checks it)


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
    with connect(dsn) as db:
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
    with connect(dsn) as db:
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
    with connect(dsn) as db:
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
    with connect(dsn) as db:
        source = db.untrack(name)
        console.print(f"table {name} no longer follows {source}; its rows and queries stay")


@main.command("resync")
@click.argument("name")
@dsn_option
@handle_errors
def resync_command(name: str, dsn: str | None) -> None:
    """Compare NAME's source with argus's rows and queue what differs as changes: after
    the source was rewritten in place (ALTER TABLE … TYPE … USING), as a cycle's
    warning says. You read the source (COPY, which runs none of its owner's code)."""
    with connect(dsn) as db:
        changes = db.resync(name)
        console.print(f"table {name}: {changes:,} change(s) queued; the next cycle claims them")


@stream.command("list")
@dsn_option
@handle_errors
def stream_list(dsn: str | None) -> None:
    """List streams and their columns."""
    with connect(dsn) as db:
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
@click.option("--shards", type=click.IntRange(1, MAX_SHARDS), default=None,
              help="how many shards (default: two a worker)")
@dsn_option
@handle_errors
def stream_distribute(name: str, column: str, shards: int | None, dsn: str | None) -> None:
    """On a Citus coordinator: shard stream NAME's history over the workers by COLUMN,
    and the nodes over it that can be."""
    with connect(dsn) as db:
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
    with connect(dsn) as db:
        db.replicate(name)
        console.print(f"stream {name}'s history is copied to every Citus node")


@stream.command("drop")
@click.argument("name")
@dsn_option
@handle_errors
def stream_drop(name: str, dsn: str | None) -> None:
    """Drop stream NAME (refused while queries use it)."""
    with connect(dsn) as db:
        db.drop_stream(name)
        console.print(f"stream {name} dropped")


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
        from ..files import load_csv

        def say(message: str) -> None:
            err_console.print(f"[dim]{escape(message)}[/]")

        with connect(dsn) as db:
            done = load_csv(db.conn, path, stream, header, load_id, progress=say)
        for file, _ in done.skipped:
            console.print(f"{file} was loaded before: skipped")
        if done.loaded or not done.skipped:
            console.print(f"{done.rows:,} rows loaded into {done.stream}; the next cycle "
                          "claims them")
        return
    from ..spark import load_file

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
    from ..files import data_files

    suffixes = {p.suffix for p in data_files(path)} if path.is_dir() else {path.suffix}
    if len(suffixes) != 1:
        return None
    return suffixes.pop().lstrip(".") or None
