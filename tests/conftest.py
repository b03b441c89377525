"""Test databases: a real PostgreSQL, never a mock.

The server is the one named by $ARGUS_TEST_DSN, else the machine's local server on
127.0.0.1:5432 if it answers, else a private embedded server started for the session.
Each test gets a fresh database cloned from a template that already holds the catalog.
"""

from __future__ import annotations

import itertools
import threading
import os
import secrets
import tempfile
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import argus
from argus import roles
from argus.embedded import EmbeddedServer

from .oracle import Oracle

LOCAL_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
_counter = itertools.count()
_roles = itertools.count()


# The files that take minutes, longest first: pytest-xdist hands each worker one file at
# a time in this order (pyproject's addopts), so the workers finish together instead of
# one waiting on the other's last long file. (Re-order by `pytest --durations=60`.)
LONGEST_FIRST = ("test_property_algebra.py", "test_faults.py", "test_spark.py", "test_layout.py",
                 "test_bench.py", "test_adapt.py", "test_citus.py", "test_property_sharing.py",
                 "test_tpch.py", "test_fuzz_differential.py", "test_durability.py",
                 "test_property.py", "test_cycle.py", "test_fuzz.py", "test_expiry.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # (stable)


def _answers(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def admin_dsn():
    """A DSN with the right to create databases."""
    if os.environ.get("ARGUS_TEST_DSN"):
        yield os.environ["ARGUS_TEST_DSN"]
        return
    if _answers(LOCAL_DSN):
        yield LOCAL_DSN
        return
    server = EmbeddedServer(Path(tempfile.mkdtemp(prefix="argus-test-server-")))
    server.ensure_running()
    yield server.dsn("postgres")
    server.destroy()


@pytest.fixture(scope="session")
def bench_database(admin_dsn):
    """The benchmarks the tests run make a database of their own name (argus_bench may
    be a user's)."""
    name = f"argus_bench_t{os.getpid()}"
    os.environ["ARGUS_BENCH_DATABASE"] = name
    yield name
    os.environ.pop("ARGUS_BENCH_DATABASE", None)
    roles.drop_database(admin_dsn, name)


@pytest.fixture(scope="session")
def logical_admin_dsn(admin_dsn):
    """A server with wal_level = logical (capture by a replication slot): the tests'
    server if it has it, else a private embedded one set so for the session."""
    with psycopg.connect(admin_dsn) as conn:
        if conn.execute("SHOW wal_level").fetchone()[0] == "logical":
            yield admin_dsn
            return
    server = EmbeddedServer(Path(tempfile.mkdtemp(prefix="argus-test-logical-")))
    server.ensure_running()
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET wal_level = logical")
        # an asynchronous commit stays unflushed for seconds (a slot decodes flushed WAL)
        conn.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
        conn.execute("ALTER SYSTEM SET wal_writer_flush_after = '1GB'")
    server.stop()
    server.ensure_running()
    yield server.dsn("postgres")
    server.destroy()


@pytest.fixture
def logical_oracle(logical_admin_dsn):
    """An oracle on a fresh database of the logical server."""
    name = f"argus_t{os.getpid()}_logical_{next(_counter)}"
    _drop_database(logical_admin_dsn, name)
    with argus.connect(_create_database(logical_admin_dsn, name)) as handle:
        yield Oracle(handle)
    _drop_database(logical_admin_dsn, name)


def _create_database(admin: str, name: str, template: str | None = None) -> str:
    with psycopg.connect(admin, autocommit=True) as conn:
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        conn.execute(statement)
    return make_conninfo(admin, dbname=name)


def _drop_database(admin: str, name: str) -> None:
    roles.drop_database(admin, name)


@pytest.fixture(scope="session")
def template_db(admin_dsn: str) -> str:
    name = f"argus_t{os.getpid()}_template"
    _drop_database(admin_dsn, name)
    argus.connect(_create_database(admin_dsn, name)).close()  # installs the catalog
    yield name
    _drop_database(admin_dsn, name)


@pytest.fixture
def fresh_dsn(admin_dsn: str, template_db: str) -> str:
    """A new database with the argus catalog installed, dropped after the test."""
    name = f"argus_t{os.getpid()}_{next(_counter)}"
    dsn = _create_database(admin_dsn, name, template=template_db)
    yield dsn
    _drop_database(admin_dsn, name)


@pytest.fixture
def db(fresh_dsn: str):
    with argus.connect(fresh_dsn) as handle:
        yield handle


@pytest.fixture
def oracle(db) -> Oracle:
    return Oracle(db)


TRANSFERS = {"tran_id": "bigint", "tran_date": "date", "sender": "text",
             "receiver": "text", "amount": "numeric(14,2)"}


@pytest.fixture
def transfers(oracle: Oracle) -> Oracle:
    oracle.create_stream("transfers", TRANSFERS, time_column="tran_date")
    return oracle


@pytest.fixture
def login(fresh_dsn):
    """make(label) -> (role, dsn): a new LOGIN role without privileges, dropped after.
    It has a password, for servers that ask for one (the embedded server does)."""
    made = []

    def make(label: str) -> tuple[str, str]:
        role = f"argus_test_{label}_{os.getpid()}_{next(_roles)}"
        password = secrets.token_urlsafe(16)
        with psycopg.connect(fresh_dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)))
        made.append(role)
        dsn = make_conninfo(fresh_dsn, user=role, password=password)
        try:
            psycopg.connect(dsn).close()
        except psycopg.OperationalError as exc:
            pytest.skip(f"this server does not let a new role log in: {exc}")
        return role, dsn

    yield make
    with psycopg.connect(fresh_dsn, autocommit=True) as admin:
        for role in made:
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def network(db):
    """Two streams and two queries, with a cycle's rows."""
    db.create_stream("s", {"id": "int", "v": "text"})
    db.create_stream("t", {"id": "int", "secret": "text"})
    db.register_query("a", "SELECT id, v FROM s WHERE id > 0")
    db.register_query("b", "SELECT id, secret FROM t")
    db.insert("s", [(1, "x")])
    db.insert("t", [(1, "classified")])
    db.run()
    return db


@pytest.fixture
def worker(fresh_dsn):
    """An owner's process carrying out registrars' requests while the test runs."""
    stop = threading.Event()

    def loop() -> None:
        with argus.connect(fresh_dsn) as owner:
            while not stop.wait(0.05):
                owner.process_requests()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()

