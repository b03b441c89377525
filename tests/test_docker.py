"""argus against a PostgreSQL container (testcontainers), where Docker runs."""

from __future__ import annotations

import os
import socket

import pytest

import argus

testcontainers = pytest.importorskip("testcontainers.postgres",
                                     reason="testcontainers is not installed")


def _docker_answers() -> bool:
    """Ask the engine's /_ping endpoint (DOCKER_HOST, else the default socket)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            sock = socket.socket(socket.AF_UNIX)
            address: object = host[len("unix://"):]
        else:
            sock = socket.socket()
            name, _, port = host.split("://", 1)[-1].partition(":")
            address = (name, int(port or 2375))
        with sock:
            sock.settimeout(3)
            sock.connect(address)
            sock.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in sock.recv(1024)
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _docker_answers(),
                                reason="no Docker engine answers on this machine")


def test_argus_on_a_postgres_container():
    with testcontainers.PostgresContainer("postgres:16", driver=None) as pg:
        with argus.connect(pg.get_connection_url()) as db:
            db.create_stream("s", {"v": "int"})
            db.register_query("q", "SELECT v FROM s WHERE v > 1")
            db.insert("s", [(1,), (2,)])
            db.run()
            assert db.results("q") == [(2,)]
