"""Commands for the operator: install, grant, settings, status, the dashboard, the
embedded server and psql."""

from __future__ import annotations

import os
import shutil
import sys

import click
from rich.table import Table

from ..errors import ArgusError
from .base import connect, console, dsn_option, err_console, handle_errors, main


@main.command()
@dsn_option
@handle_errors
def init(dsn: str | None) -> None:
    """Create (or upgrade) the argus catalog in the database."""
    from ..catalog import installed_version

    with connect(dsn) as db:
        console.print(f"argus catalog version {installed_version(db.conn)} ready in "
                      f"database {db.conn.info.dbname!r} on {db.conn.info.host}:"
                      f"{db.conn.info.port}")


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
    with connect(dsn) as db:
        db.grant(group, role, query=query, stream=stream)
        what = f"query {query}" if query else f"stream {stream}" if stream else "everything"
        console.print(f"{role} is a {group} of {what}")


@main.command()
@grant_arguments
def revoke(group: str, role: str, query: str | None, stream: str | None, dsn: str | None) -> None:
    """Take back what `argus grant` gave."""
    with connect(dsn) as db:
        db.revoke(group, role, query=query, stream=stream)
        what = f" of query {query}" if query else f" of stream {stream}" if stream else ""
        console.print(f"{role} is no longer a {group}{what}")


@main.command()
@click.argument("name", required=False)
@click.argument("value", required=False)
@dsn_option
@handle_errors
def config(name: str | None, value: str | None, dsn: str | None) -> None:
    """Show the database's settings, or set NAME to VALUE."""
    from ..settings import EXPERT, SETTINGS

    if name is not None and name not in SETTINGS:
        raise click.UsageError(f"unknown setting {name!r} (settings: {', '.join(SETTINGS)})")
    with connect(dsn) as db:
        current = db.configure(**{name: value}) if value is not None else db.settings()
    shown = [key for key in SETTINGS if name in (None, key)]
    for title, keys in ((None, [k for k in shown if k not in EXPERT]),
                        ("for experts: tuning whose defaults suit most networks",
                         [k for k in shown if k in EXPERT])):
        if keys:
            table = Table("setting", "value", "default", "what it does", title=title)
            for key in keys:
                table.add_row(key, str(current[key]), str(SETTINGS[key].default),
                              SETTINGS[key].help)
            console.print(table)


@main.command()
@dsn_option
@handle_errors
def status(dsn: str | None) -> None:
    """Streams, queries, nodes, sharing and recent cycles."""
    from ..status import status_tables

    with connect(dsn) as db:
        for renderable in status_tables(db.conn):
            console.print(renderable)


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

    from ..api import resolve_dsn
    from ..dashboard import LOOPBACK, create_app

    target = resolve_dsn(dsn)
    with connect(target):  # the catalog is there (and current)
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
    from ..embedded import default_server

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
    from ..embedded import default_server

    console.print("stopped" if default_server().stop() else "not running")


@server.command("status")
@handle_errors
def server_status() -> None:
    """Whether the embedded server runs (exit 1 if not), its DSN and data directory."""
    from ..embedded import default_server

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
    from ..api import resolve_dsn
    from ..embedded import bin_dir

    exe = shutil.which("psql") or str(bin_dir() / "psql")
    os.execv(exe, [exe, resolve_dsn(dsn), *ctx.args])


if __name__ == "__main__":
    main()
