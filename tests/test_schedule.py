"""Scheduling cycles: crontab entries and pg_cron jobs."""

from __future__ import annotations

import shutil
import subprocess
import time

import psycopg
import pytest
from click.testing import CliRunner

from argus import ArgusError
from argus import schedule as sched
from argus.cli import main


def cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def crontab():
    if shutil.which("crontab") is None:
        pytest.skip("no crontab command (Debian: apt-get install cron)")
    saved = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    yield
    if saved.returncode == 0:
        subprocess.run(["crontab", "-"], input=saved.stdout, text=True, check=True)
    else:
        subprocess.run(["crontab", "-r"], capture_output=True)


def test_every_and_cron_expressions():
    assert sched.cron_expression("1m", None) == "* * * * *"
    assert sched.cron_expression("15m", None) == "*/15 * * * *"
    assert sched.cron_expression("1d", None) == "0 0 * * *"
    assert sched.cron_expression("30s", None, seconds_ok=True) == "30 seconds"
    for bad in ("30s", "5 parsecs", "0m"):
        with pytest.raises(ArgusError):
            sched.cron_expression(bad, None)
    with pytest.raises(ArgusError, match="five fields"):
        sched.cron_expression(None, "* * *")
    with pytest.raises(ArgusError, match="exactly one"):
        sched.cron_expression("5m", "* * * * *")


def test_a_crontab_entry_runs_cycles_and_can_be_removed(crontab, db, fresh_dsn, tmp_path):
    db.create_stream("s", {"v": "int"})
    db.register_query("q", "SELECT v FROM s WHERE v > 1")
    db.insert("s", [(1,), (5,)])
    log = tmp_path / "cycles.log"
    out = cli("schedule", "--every", "5m", "--log", str(log), "--dsn", fresh_dsn)
    assert out.exit_code == 0, out.output
    cli("schedule", "--every", "10m", "--log", str(log), "--dsn", fresh_dsn)  # replaces
    entries = [e for e in sched.entries() if e.target == sched.tag(fresh_dsn)]
    assert len(entries) == 1 and entries[0].schedule == "*/10 * * * *"
    assert "schedule" in cli("schedule", "--list").output
    # what cron would run, run by a shell as cron does
    command = entries[0].line.split(None, 5)[5].split(sched.MARKER)[0]
    subprocess.run(["/bin/sh", "-c", command], check=True)
    assert db.results("q") == [(5,)]
    assert "run 1:" in log.read_text()
    assert "unscheduled" in cli("unschedule", "--dsn", fresh_dsn).output
    assert not [e for e in sched.entries() if e.target == sched.tag(fresh_dsn)]
    assert "nothing was scheduled" in cli("unschedule", "--dsn", fresh_dsn).output


@pytest.mark.slow
def test_a_pg_cron_job_runs_cycles_inside_postgres(db, fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        preload = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    if "pg_cron" not in preload:
        pytest.skip("pg_cron is not loaded in this server")
    db.create_stream("s", {"v": "int"})
    db.register_query("q", "SELECT v FROM s")
    db.insert("s", [(7,)])
    out = cli("schedule", "--every", "1m", "--pg-cron", "--dsn", fresh_dsn)
    assert out.exit_code == 0, out.output
    try:
        deadline = time.time() + 75
        while db.results("q") != [(7,)]:
            assert time.time() < deadline, "pg_cron did not run a cycle within a minute"
            time.sleep(1)
    finally:
        assert "unscheduled" in cli("unschedule", "--pg-cron", "--dsn", fresh_dsn).output


def test_pg_cron_missing_is_a_clear_error(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        preload = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    if "pg_cron" in preload:
        pytest.skip("pg_cron is loaded here")
    out = cli("schedule", "--every", "1m", "--pg-cron", "--dsn", fresh_dsn)
    assert out.exit_code == 1 and "pg_cron is not available" in out.output


def test_entries_of_databases_with_similar_names_are_kept_apart(crontab, admin_dsn, tmp_path):
    """`pipe_cron` and `pipe_cron2`: removing one's entry keeps the other's; the crontab
    holds no password; each database logs to its own file."""
    from psycopg.conninfo import make_conninfo

    first = make_conninfo(admin_dsn, dbname="pipe_cron", password="s3cret:x")
    second = make_conninfo(admin_dsn, dbname="pipe_cron2", password="s3cret:x")
    sched.schedule_cron(first, "*/5 * * * *")
    sched.schedule_cron(second, "*/7 * * * *")
    mine = {e.target: e for e in sched.entries() if e.target.endswith(("pipe_cron",
                                                                        "pipe_cron2"))}
    assert len(mine) == 2
    assert all("s3cret" not in e.line and "PGPASSFILE=" in e.line for e in mine.values())
    assert sched.passfile().stat().st_mode & 0o077 == 0
    assert sched.unschedule_cron(first)
    left = [e.target for e in sched.entries() if "pipe_cron" in e.target]
    assert left == [sched.tag(second)]
    assert sched.default_log(sched.tag(first)) != sched.default_log(sched.tag(second))
    assert sched.unschedule_cron(second)


def test_the_cycle_log_is_timestamped_and_names_the_database(db, fresh_dsn, tmp_path):
    log = tmp_path / "db.log"
    out = cli("run", "--log", str(log), "--dsn", fresh_dsn)
    assert out.exit_code == 0, out.output
    line = log.read_text().strip()
    assert line[:4].isdigit() and sched.tag(fresh_dsn) in line and "run 1:" in line


def test_a_cycle_that_cannot_connect_says_so_in_its_log(tmp_path):
    """Cron's cycles fail where they log: a server that is down is a line in the log,
    not only in the .err file cron's shell appends to."""
    log = tmp_path / "db.log"
    down = "postgresql://postgres@127.0.0.1:1/nowhere"  # (port 1: nothing listens)
    out = cli("run", "--log", str(log), "--dsn", down)
    assert out.exit_code == 1
    line = log.read_text().strip()
    assert "127.0.0.1:1/nowhere failed: cannot connect" in line
    err = tmp_path / "db.log.err"  # rotated at 1 MB, as the log is
    err.write_bytes(b"x" * (1 << 20) + b"\\n")
    cli("run", "--log", str(log), "--dsn", down)
    assert (tmp_path / "db.log.err.1").exists() and not err.exists()


def test_a_schedule_on_the_embedded_server_names_its_database_not_a_dsn(tmp_path,
                                                                       monkeypatch):
    """After a reboot the embedded server is down: a crontab line with its DSN fixed
    found nothing listening; by the database's name, `argus run` starts it."""
    from argus.embedded import EmbeddedServer

    server = EmbeddedServer(tmp_path / "home")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "server.json").write_text('{"port": 54329, "password": "pw"}')
    monkeypatch.setattr("argus.embedded.default_server", lambda: server)
    line = sched.command_line(server.dsn("shop"), tmp_path / "shop.log")
    assert " run -d shop --log " in line and "ARGUS_DSN" not in line and "pw" not in line
    other = sched.command_line("postgresql://app@db.example:5432/shop", tmp_path / "x.log")
    assert "ARGUS_DSN=" in other
