"""The embedded default: no DSN, a private PostgreSQL under $ARGUS_HOME."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

import argus
from argus.cli import main
from argus.embedded import EmbeddedServer

pytestmark = pytest.mark.embedded


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ARGUS_HOME", str(tmp_path / "argus-home"))
    monkeypatch.delenv("ARGUS_DSN", raising=False)
    yield tmp_path / "argus-home"
    EmbeddedServer(tmp_path / "argus-home").destroy()


def test_connect_without_dsn_starts_and_reuses_a_private_server(home):
    with argus.connect() as db:
        db.create_stream("s", {"a": "int"})
        db.register_query("pos", "SELECT a FROM s WHERE a > 0")
        db.insert("s", [(1,), (-1,)])
        db.run()
        first_dsn = db.dsn
    server = EmbeddedServer(home)
    assert server.running()
    assert "127.0.0.1" in first_dsn  # TCP on loopback, so Spark's JDBC can reach it
    assert server.stop()
    assert not server.running()
    with argus.connect() as db:  # started again, same data
        assert db.results("pos") == [(1,)]


def test_the_embedded_server_needs_its_password(home):
    with argus.connect():
        pass
    port = EmbeddedServer(home).settings()["port"]
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(f"postgresql://postgres:wrong@127.0.0.1:{port}/argus", connect_timeout=5)


def test_demo_runs_on_the_embedded_default(home):
    result = CliRunner().invoke(main, ["demo", "--cycles", "2", "--history", "1000",
                                       "--batch", "300"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "cycle 2" in result.output
    assert "transfers: 1,000 rows of history loaded" in result.output  # (issue 54: 0)
    # off a terminal no line is as wide as the console may be (rules of 1,000,000 ─)
    assert max(map(len, result.output.splitlines())) < 300
    status = CliRunner().invoke(main, ["server", "status"])
    assert "running" in status.output


def test_a_stale_pid_file_of_another_process_is_recovered(home):
    """After a crash, postmaster.pid may name a PID now used by another process: the
    server is not 'running' because of it, argus says so and starts it again."""
    import os
    import signal
    import subprocess

    with argus.connect() as db:
        db.create_stream("s", {"a": "int"})
    server = EmbeddedServer(home)
    pid_file = server.pgdata / "postmaster.pid"
    old = int(pid_file.read_text().split()[0])
    os.kill(old, signal.SIGKILL)  # a crash: the pid file stays behind
    other = subprocess.Popen(["sleep", "60"])  # a live process with some PID
    try:
        lines = pid_file.read_text().splitlines()
        pid_file.write_text("\n".join([str(other.pid)] + lines[1:]) + "\n")
        assert not server.running()
        assert "another process" in server.stale_pid()
        status = CliRunner().invoke(main, ["server", "status"])
        assert "stale" in status.output and "another process" in status.output
        assert status.exit_code == 1  # (issue 54: 0 when not running)
        with pytest.warns(UserWarning, match="stale postmaster.pid"):
            with argus.connect() as db:  # recovered: the server restarts, data intact
                assert [s.name for s in db.streams()] == ["s"]
    finally:
        other.kill()
        other.wait()


def test_the_server_commands_do_not_print_the_password(home):
    with argus.connect():
        pass
    password = EmbeddedServer(home).settings()["password"]
    for command in ("status", "start"):  # (issue 54: `start` printed it)
        out = CliRunner().invoke(main, ["server", command])
        assert "running" in out.output and password not in out.output, command


def test_the_servers_files_are_private_and_no_directory_changes_mode(tmp_path, monkeypatch):
    """Hole 13 of issue 48: postgres.log was 0644 in a 0755 home; the password files were
    created 0644 and only then made 0600; as root every parent directory was made o+x
    (/root 700 -> 701). The log now rotates in the data directory."""
    import os
    import stat

    from argus.embedded import write_private

    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    before = {p: p.stat().st_mode for p in (tmp_path, closed)}
    monkeypatch.setattr(os, "umask", os.umask)  # restored whatever happens
    old = os.umask(0)  # the worst umask: every file the server's code makes is as asked
    try:
        server = EmbeddedServer(closed / "home")
        server.ensure_running()
    finally:
        os.umask(old)
    try:
        assert {p: p.stat().st_mode for p in before} == before
        for path in (server.home / "server.json", server.log):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
            with pytest.raises(psycopg.Error):
                conn.execute("ALTER ROLE nobody_here PASSWORD 'hunter2'")
            assert conn.execute("SHOW logging_collector").fetchone() == ("on",)
            assert conn.execute("SHOW log_file_mode").fetchone() == ("0600",)
            (log_file,) = conn.execute("SELECT pg_current_logfile()").fetchone()
        # (the failed statement, its password too, is logged: the log is secret)
        assert stat.S_IMODE((server.pgdata / log_file).stat().st_mode) == 0o600
    finally:
        server.destroy()
    secret = tmp_path / "secret"
    secret.write_text("old")
    secret.chmod(0o644)
    write_private(secret, "new")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and secret.read_text() == "new"
