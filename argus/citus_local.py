"""A local Citus cluster for tests and benchmarks: a coordinator and workers, each its
own data directory and loopback port, from the machine's PostgreSQL with the citus
extension installed (vendor/citus/build.sh). argus itself does not use this module.

`start(root, workers=2)` initdbs the nodes (as the postgres system user when run as
root), starts them and registers the workers; `Cluster.create_database(name)` makes a
database on every node with the extension and the node list (Citus keeps it per
database). `unavailable()` says why no cluster can be started here (None: one can).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

HOST = "127.0.0.1"


def _pg_config() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_config"))
    return found[-1] if found else None


def _run(root: Path, *args: str) -> None:
    """A server program, as the postgres system user when we are root (PostgreSQL
    refuses to run as root)."""
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        args = ("runuser", "-u", "postgres", "--", *args)
    subprocess.run(args, check=True, capture_output=True)


def unavailable() -> str | None:
    config = _pg_config()
    if config is None:
        return "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin)"
    lib = Path(subprocess.check_output([str(config), "--pkglibdir"], text=True).strip())
    if not (lib / "citus.so").exists():
        return (f"the citus extension is not installed in {lib} "
                "(build it with vendor/citus/build.sh, as root)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start PostgreSQL as another user"
    return None


@dataclass(frozen=True)
class Cluster:
    root: Path
    ports: tuple[int, ...]  # the coordinator's first

    def dsn(self, database: str = "postgres", node: int = 0) -> str:
        return f"postgresql://postgres@{HOST}:{self.ports[node]}/{database}"

    def create_database(self, name: str) -> str:
        """A database on every node, with citus and the workers registered; its DSN."""
        for node in range(len(self.ports)):
            with psycopg.connect(self.dsn(node=node), autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self._register(name)
        return self.dsn(name)

    def drop_database(self, name: str, tries: int = 5) -> None:
        """FORCE ends the database's sessions, but a loaded machine's may outlive its
        wait (5 s), or Citus's maintenance daemon come back first: tried again then."""
        for node in range(len(self.ports)):
            with psycopg.connect(self.dsn(node=node), autocommit=True) as conn:
                for attempt in range(tries):
                    try:
                        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                            sql.Identifier(name)))
                        break
                    except psycopg.errors.ObjectInUse:
                        if attempt == tries - 1:
                            raise
                        time.sleep(1.0)

    def _register(self, name: str) -> None:
        for node in range(len(self.ports)):
            with psycopg.connect(self.dsn(name, node), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        with psycopg.connect(self.dsn(name), autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", (HOST, self.ports[0]))
            for port in self.ports[1:]:
                conn.execute("SELECT citus_add_node(%s, %s)", (HOST, port))

    def stop_node(self, node: int, mode: str = "fast") -> None:
        data = self.root / f"node{node}"
        _run(self.root, str(_pg_config().parent / "pg_ctl"), "-D", str(data), "-m", mode,
             "stop")

    def start_node(self, node: int) -> None:
        data = self.root / f"node{node}"
        _run(self.root, str(_pg_config().parent / "pg_ctl"), "-D", str(data), "-l",
             str(data / "log"), "-w", "start")

    def stop(self) -> None:
        for node in range(len(self.ports)):
            try:
                self.stop_node(node)
            except subprocess.CalledProcessError:
                pass  # not running


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start(root: Path, workers: int = 2) -> Cluster:
    """A coordinator and `workers` workers under `root`, started and registered."""
    root.mkdir(parents=True, exist_ok=True)
    bindir, ports = _pg_config().parent, []
    for i in range(workers + 1):
        data, port = root / f"node{i}", _free_port()
        _run(root, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
             "-E", "UTF8", "--no-locale")
        with open(data / "postgresql.conf", "a") as conf:
            conf.write(f"\nport = {port}\nlisten_addresses = '{HOST}'\n"
                       f"unix_socket_directories = '{data}'\n"
                       "shared_preload_libraries = 'citus'\nfsync = off\n"
                       "max_connections = 200\nmax_prepared_transactions = 200\n")
        ports.append(port)
    cluster = Cluster(root, tuple(ports))
    for node in range(len(ports)):
        cluster.start_node(node)
    cluster._register("postgres")
    return cluster
