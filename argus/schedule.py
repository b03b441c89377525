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
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .embedded import default_home, write_private
from .errors import ArgusError

MARKER = "# argus-cycle:"
_EVERY = re.compile(r"^(\d+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?)$")


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
    n, unit = _every(every)
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


def interval(every: str) -> int:
    """`--every 30s` as seconds, for a loop of cycles in one session.

    >>> interval("30s"), interval("2m"), interval("1h")
    (30, 120, 3600)
    """
    n, unit = _every(every)
    seconds = n * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    if seconds > 86400:
        raise ArgusError(f"--every {every!r}: at most a day between cycles in one session; "
                         "for longer, argus schedule (cron)")
    return seconds


def _every(every: str) -> tuple[int, str]:
    """`--every`'s number and unit (s, m, h or d)."""
    match = _EVERY.match(every.strip().lower())
    if not match or int(match.group(1)) <= 0:
        raise ArgusError(f"--every {every!r}: write a positive number and a unit, like 30s, "
                         "5m, 1h, 1d")
    return int(match.group(1)), match.group(2)[0]


def tag(dsn: str) -> str:
    parts = conninfo_to_dict(dsn)
    return f"{parts.get('host') or 'local'}:{parts.get('port') or 5432}/{parts.get('dbname')}"


# -- crontab ---------------------------------------------------------------------------
# Entries are edited with python-crontab and found by their exact comment,
# `argus-cycle: <host:port/database>`: scheduling or removing one database's entry
# never touches another's (a database named `pipe` and one named `pipe2`). The crontab
# line carries no password: it names a password file of argus's (0600), and each
# database logs to a file of its own, one timestamped line per cycle, rotated.

COMMENT = "argus-cycle: "
MARKER = "# " + COMMENT.strip()


@dataclass(frozen=True)
class Entry:
    schedule: str
    target: str
    line: str


def _crontab():
    if shutil.which("crontab") is None:
        raise ArgusError("no crontab command on this machine: install cron (Debian: "
                         "apt-get install cron), or schedule inside PostgreSQL with --pg-cron")
    from crontab import CronTab

    try:
        return CronTab(user=True)
    except OSError as exc:
        raise ArgusError(f"cannot read the crontab: {exc}") from None


def entries() -> list[Entry]:
    return [Entry(str(job.slices), job.comment[len(COMMENT):], job.render())
            for job in _crontab() if job.comment.startswith(COMMENT)]


def default_log(target: str) -> Path:
    return default_home() / "logs" / (re.sub(r"[^A-Za-z0-9_.-]", "_", target) + ".log")


def passfile() -> Path:
    return default_home() / "pgpass"


def _remember_password(dsn: str) -> str:
    """The DSN without its password, which goes to argus's password file (libpq's
    format, 0600) for that host, port, database and user."""
    parts = conninfo_to_dict(dsn)
    password = parts.pop("password", None)
    if password is None:
        return dsn
    def field(value: object) -> str:
        return str(value).replace("\\", "\\\\").replace(":", "\\:")
    key = ":".join(field(parts.get(k) or d) for k, d in
                   (("host", "localhost"), ("port", 5432), ("dbname", "*"), ("user", "*")))
    path = passfile()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = [line for line in (path.read_text().splitlines() if path.exists() else [])
             if not line.startswith(key + ":")]
    write_private(path, "\n".join(lines + [f"{key}:{field(password)}"]) + "\n")
    return make_conninfo(**parts)


def command_line(dsn: str, log: Path) -> str:
    """The shell command cron runs: this argus, this database, logging to `log`. On the
    embedded server, by its database's name only: `argus run` starts the server when
    it is down (after a reboot), where a fixed DSN would find nothing listening."""
    argus = Path(sys.executable).with_name("argus")
    program = shlex.quote(str(argus)) if argus.exists() else (
        f"{shlex.quote(sys.executable)} -m argus.cli")
    logging = f"--log {shlex.quote(str(log))} >> {shlex.quote(str(log))}.err 2>&1"
    database = _embedded_database(dsn)
    if database is not None:
        return f"{program} run -d {shlex.quote(database)} {logging}"
    return (f"PGPASSFILE={shlex.quote(str(passfile()))} "
            f"ARGUS_DSN={shlex.quote(_remember_password(dsn))} {program} run {logging}")


def _embedded_database(dsn: str) -> str | None:
    """The database `dsn` names on this user's embedded server; None for another server."""
    from .embedded import default_server

    server = default_server()
    try:
        port = server.settings()["port"]
    except (OSError, ValueError, KeyError):
        return None  # (no embedded server here)
    parts = conninfo_to_dict(dsn)
    if parts.get("host") in ("127.0.0.1", "localhost") and str(parts.get("port")) == str(port):
        return parts.get("dbname") or "postgres"
    return None


def cron_running() -> bool:
    """Whether a cron daemon runs on this machine (a process named cron or crond)."""
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() in ("cron", "crond"):
                return True
        except OSError:
            continue
    return False


def schedule_cron(dsn: str, expression: str, log: Path | None = None) -> Entry:
    target = tag(dsn)
    log = log or default_log(target)
    log.parent.mkdir(parents=True, exist_ok=True)
    cron = _crontab()
    cron.remove_all(comment=COMMENT + target)
    job = cron.new(command=command_line(dsn, log), comment=COMMENT + target)
    job.setall(expression)
    if not job.is_valid():
        raise ArgusError(f"{expression!r} is not a valid cron schedule")
    cron.write()
    return Entry(str(job.slices), target, job.render())


def unschedule_cron(dsn: str) -> bool:
    cron = _crontab()
    removed = cron.remove_all(comment=COMMENT + tag(dsn))
    if removed:
        cron.write()
    return bool(removed)


def log_cycle(path: Path, target: str, line: str) -> None:
    """Append one timestamped line for a cycle of `target` to `path`, rotated at 1 MB
    (five files kept); the output cron keeps beside it (`path`.err) rotated as well."""
    import logging
    from logging.handlers import RotatingFileHandler

    path.parent.mkdir(parents=True, exist_ok=True)
    errors = path.with_name(path.name + ".err")  # (what cron's shell appends to)
    if errors.exists() and errors.stat().st_size > 1 << 20:
        errors.replace(errors.with_name(errors.name + ".1"))
    handler = RotatingFileHandler(path, maxBytes=1 << 20, backupCount=5)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    record = logging.LogRecord("argus", logging.INFO, "", 0, f"{target} {line}", None, None)
    try:
        handler.emit(record)
    finally:
        handler.close()


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
