"""Run cycles on a schedule: a crontab entry running `argus run`, or a pg_cron job
running `SELECT argus.run_cycle()` inside PostgreSQL.

Overlaps are impossible either way (the cycle lock); a scheduled cycle that finds
another one running skips, and one that finds nothing new costs milliseconds.
Entries are tagged with the database they serve, so several databases can be
scheduled side by side and `unschedule` removes exactly one.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .embedded import default_home
from .errors import ArgusError

MARKER = "# argus-cycle:"
_EVERY = re.compile(r"^(\d+)\s*(s|sec|m|min|h|hour|d|day)s?$")


def cron_expression(every: str | None, cron: str | None, seconds_ok: bool = False) -> str:
    """`--every 5m` (or a cron expression) as a schedule.

    >>> cron_expression("5m", None), cron_expression("2h", None), cron_expression(None, "0 3 * * *")
    ('*/5 * * * *', '0 */2 * * *', '0 3 * * *')
    """
    if (every is None) == (cron is None):
        raise ArgusError("give exactly one of --every (like 5m, 1h) or --cron (an expression)")
    if cron is not None:
        if len(cron.split()) != 5:
            raise ArgusError(f"{cron!r} is not a cron expression (five fields: minute hour "
                             "day-of-month month day-of-week)")
        return cron
    match = _EVERY.match(every.strip().lower())
    if not match:
        raise ArgusError(f"--every {every!r}: write a number and a unit, like 30s, 5m, 1h, 1d")
    n, unit = int(match.group(1)), match.group(2)[0]
    if n <= 0:
        raise ArgusError("--every must be positive")
    if unit == "s":
        if not seconds_ok:
            raise ArgusError("cron runs at most once a minute: use --every 1m or more "
                             "(pg_cron accepts seconds)")
        if n > 59:
            raise ArgusError("seconds schedules go up to 59s; use minutes beyond")
        return f"{n} seconds"
    if unit == "m":
        return "* * * * *" if n == 1 else f"*/{n} * * * *"
    if unit == "h":
        return "0 * * * *" if n == 1 else f"0 */{n} * * *"
    return "0 0 * * *" if n == 1 else f"0 0 */{n} * *"


def tag(dsn: str) -> str:
    parts = conninfo_to_dict(dsn)
    return f"{parts.get('host') or 'local'}:{parts.get('port') or 5432}/{parts.get('dbname')}"


# -- crontab ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    schedule: str
    target: str
    line: str


def _crontab() -> str:
    if shutil.which("crontab") is None:
        raise ArgusError("no crontab command on this machine: install cron (Debian: "
                         "apt-get install cron), or schedule inside PostgreSQL with --pg-cron")
    done = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    if done.returncode != 0 and "no crontab" not in done.stderr:
        raise ArgusError(f"crontab -l failed: {done.stderr.strip()}")
    return done.stdout if done.returncode == 0 else ""


def _install(text: str) -> None:
    done = subprocess.run(["crontab", "-"], input=text, capture_output=True, text=True)
    if done.returncode != 0:
        raise ArgusError(f"crontab refused the new table: {done.stderr.strip()}")


def entries() -> list[Entry]:
    found = []
    for line in _crontab().splitlines():
        if MARKER in line:
            target = line.split(MARKER, 1)[1].strip()
            found.append(Entry(" ".join(line.split()[:5]), target, line))
    return found


def command_line(dsn: str, log: Path) -> str:
    """The shell command cron runs: this argus, this DSN, appending to `log`."""
    argus = Path(sys.executable).with_name("argus")
    program = shlex.quote(str(argus)) if argus.exists() else (
        f"{shlex.quote(sys.executable)} -m argus.cli")
    return (f"ARGUS_DSN={shlex.quote(dsn)} {program} run "
            f">> {shlex.quote(str(log))} 2>&1")


def schedule_cron(dsn: str, expression: str, log: Path | None = None) -> Entry:
    log = log or default_home() / "cycles.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    target = tag(dsn)
    kept = [line for line in _crontab().splitlines() if f"{MARKER} {target}" not in line]
    line = f"{expression} {command_line(dsn, log)} {MARKER} {target}"
    _install("\n".join(kept + [line]) + "\n")
    return Entry(expression, target, line)


def unschedule_cron(dsn: str) -> bool:
    target = tag(dsn)
    lines = _crontab().splitlines()
    kept = [line for line in lines if f"{MARKER} {target}" not in line]
    if len(kept) == len(lines):
        return False
    _install("\n".join(kept) + "\n" if kept else "")
    return True


# -- pg_cron ---------------------------------------------------------------------------

def _pg_cron(dsn: str) -> psycopg.Connection:
    """A connection to the database where pg_cron lives (cron.database_name)."""
    with psycopg.connect(dsn, autocommit=True) as probe:
        available = probe.execute("SELECT 1 FROM pg_available_extensions WHERE name = "
                                  "'pg_cron'").fetchone()
        preload = probe.execute("SHOW shared_preload_libraries").fetchone()[0]
        if not available or "pg_cron" not in preload:
            raise ArgusError("pg_cron is not available in this server (it must be installed "
                             "and listed in shared_preload_libraries): schedule with cron "
                             "instead (argus schedule without --pg-cron)")
        home = probe.execute("SELECT current_setting('cron.database_name')").fetchone()[0]
    conn = psycopg.connect(dsn, autocommit=True, dbname=home)
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_cron")
    return conn


def schedule_pg_cron(dsn: str, expression: str) -> int:
    database = conninfo_to_dict(dsn).get("dbname") or "postgres"
    with _pg_cron(dsn) as conn:
        name = f"argus-cycle-{database}"
        (job,) = conn.execute("SELECT cron.schedule_in_database(%s, %s, %s, %s)",
                              (name, expression, "SELECT argus.run_cycle()", database)).fetchone()
        return job


def unschedule_pg_cron(dsn: str) -> bool:
    database = conninfo_to_dict(dsn).get("dbname") or "postgres"
    with _pg_cron(dsn) as conn:
        name = f"argus-cycle-{database}"
        if not conn.execute("SELECT 1 FROM cron.job WHERE jobname = %s", (name,)).fetchone():
            return False
        conn.execute("SELECT cron.unschedule(%s)", (name,))
        return True


def pg_cron_jobs(dsn: str) -> list[tuple[str, str, str]]:
    with _pg_cron(dsn) as conn:
        return conn.execute("SELECT jobname, schedule, database FROM cron.job "
                            "WHERE jobname LIKE 'argus-cycle-%' ORDER BY jobname").fetchall()
