"""What every benchmark shares: its command line and a fresh database to run in."""

from __future__ import annotations

import argparse

import psycopg
from psycopg.conninfo import make_conninfo

from argus.api import resolve_dsn

DATABASE = "argus_bench"


def arguments(doc: str, **options: int) -> argparse.Namespace:
    """--dsn plus integer options with their defaults, e.g. history=100_000."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dsn", default=None,
                        help="server to run on (default: $ARGUS_DSN, else the embedded one)")
    for name, default in options.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    return parser.parse_args()


def fresh_database(dsn: str | None) -> str:
    """Recreate the benchmark database on the server `dsn` names; return its DSN."""
    admin = make_conninfo(resolve_dsn(dsn), dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")  # our constant
        conn.execute(f"CREATE DATABASE {DATABASE}")
    return make_conninfo(admin, dbname=DATABASE)
