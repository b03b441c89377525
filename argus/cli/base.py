"""What every command shares: the console, the --dsn option, errors shown as
messages, and the `argus` group the commands join."""

from __future__ import annotations

import functools
import logging
import sys

import click
from rich.console import Console
from rich.markup import escape

from .. import __version__
from ..errors import ArgusError


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

            from ..dsn import resolve_dsn

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


def connect(dsn: str | None, sharing: str | None = None):
    """argus.connect, imported when a command connects; its session runs argus's
    statements only, on the search_path cycles run with (settings.pin_search_path: a
    command's catalog reads outside the API's methods, `argus status`'s, too)."""
    from .. import api
    from ..settings import pin_search_path

    db = api.connect(dsn, sharing)
    pin_search_path(db.conn)
    return db


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
