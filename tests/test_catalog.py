"""The versioned catalog and the views psql users read."""

from __future__ import annotations

import doctest

import psycopg
import pytest

import argus
from argus import analyze, catalog, names, schedule, streams


def test_migrate_is_idempotent_and_versioned(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        assert catalog.installed_version(conn) == catalog.latest_version()
        assert catalog.migrate(conn) == 0


def test_a_newer_catalog_is_refused(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO argus_catalog.schema_version VALUES (999)")
    with pytest.raises(argus.CatalogError, match="newer than this argus"):
        argus.connect(fresh_dsn)


def test_catalog_views_exist_for_psql_users(db):
    for view in ("queries", "nodes", "runs", "streams"):
        db.conn.execute(f"SELECT * FROM argus.{view}").fetchall()  # noqa: S608 - constants


@pytest.mark.parametrize("module", [analyze, catalog, names, schedule, streams])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0
