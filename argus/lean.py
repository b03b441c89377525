"""A session that runs cycles and nothing else, for `argus run` from cron: connected
without argus.api, so without the planner, the node compilers and sqlglot (most of a
small cycle's cost from cron was importing them: ~0.45 of ~0.55 s).

It is used only where the full connect (argus.api.Argus) would do nothing but check:
the catalog and the network's code were last brought up to date by an argus of these
very files (program_state.source_fingerprint, written by the full connect of an owner),
the session acts as argus's owner, no registrar's request waits (the full `argus run`
carries them out first) and the network is not on Citus (whose durability an owner's
connect settles). Anywhere else, `session` says None and the caller connects fully."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import psycopg

from . import cycle, settings
from .resources import resource_dir

# the files whose hash names an argus (all of them: a change anywhere asks the full
# connect once, which is cheap, rather than trusting a list of what the checks read)
_SUFFIXES = (".py", ".sql", ".json")

_READY = """
SELECT p.source_fingerprint = %s
       AND to_regclass('pg_dist_partition') IS NULL
       AND NOT EXISTS (SELECT FROM argus_catalog.requests WHERE status = 'pending')
  FROM argus_catalog.program_state p
"""


@functools.cache
def fingerprint() -> str:
    """A hash of this argus's files: the package's and its catalog and templates."""
    digest = hashlib.md5()
    package = Path(__file__).resolve().parent
    for root in (package, resource_dir("catalog"), resource_dir("sql_templates")):
        for path in sorted(p for p in root.rglob("*")
                           if p.suffix in _SUFFIXES and "__pycache__" not in p.parts):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def record(conn: psycopg.Connection) -> None:
    """After an owner's full connect brought everything up to date: these files did."""
    conn.execute("UPDATE argus_catalog.program_state SET source_fingerprint = %s "
                 "WHERE source_fingerprint IS DISTINCT FROM %s", (fingerprint(),) * 2)


class CycleSession:
    """What `argus run` asks of a connection (argus.api.Argus's run, owner, dsn, conn)."""

    owner = True

    def __init__(self, dsn: str, conn: psycopg.Connection) -> None:
        self.dsn, self.conn = dsn, conn

    def run(self, wait: bool = True) -> cycle.CycleReport:
        with settings.pinned_path(self.conn):
            return cycle.run(self.conn, wait=wait)

    def process_requests(self, seconds: float | None = None) -> list:
        return []  # (none waited when it connected)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> CycleSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def session(dsn: str) -> CycleSession | None:
    """A session that runs cycles, where nothing else need be checked; else None."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, application_name="argus")
    except psycopg.Error:
        return None  # (the full connect says why, in its words)
    try:
        conn.execute("SET default_transaction_isolation = 'read committed'")
        settings.pin_search_path(conn)
        with conn.transaction():
            row = conn.execute(_READY, (fingerprint(),)).fetchone()
    except psycopg.Error:  # an older catalog, no catalog, or not argus's owner
        row = None
    if not (row and row[0]):
        conn.close()
        return None
    return CycleSession(dsn, conn)
