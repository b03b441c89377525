"""Derived state without WAL (settings.durability): the network's tables are unlogged,
a crash empties them, answers are refused until argus rebuilds them from the stream
histories, and the rebuilt network is exact. The crash is what PostgreSQL's recovery
does to unlogged tables (each reset to empty); tests/test_faults.py stops a real server
with an immediate shutdown mid-cycle."""

from __future__ import annotations

import datetime
import logging
import random
import re

import psycopg
import pytest
from psycopg import sql

import argus
from argus.errors import CycleError
from argus.names import NETWORK_SCHEMA, STREAMS_SCHEMA
from argus.status import status_tables

from .conftest import TRANSFERS
from .oracle import Oracle

QUERIES = {
    "per_sender": "SELECT sender, count(*) AS n, sum(amount) AS total, "
                  "count(DISTINCT receiver) AS receivers FROM transfers GROUP BY sender",
    "top2": "SELECT sender, amount, rn FROM (SELECT sender, amount, row_number() OVER "
            "(PARTITION BY sender ORDER BY amount DESC, tran_id) AS rn FROM transfers) x "
            "WHERE rn <= 2",
    "recent": "SELECT receiver, count(*) AS n FROM transfers "
              "WHERE tran_date > argus_now() - interval '3 days' GROUP BY receiver",
    "named": "SELECT t.tran_id, t.amount, a.label FROM transfers t "
             "LEFT JOIN accounts a ON a.id = t.sender",
    "big_receivers": "SELECT DISTINCT receiver FROM transfers WHERE amount > 50",
}
NAMES = [f"acct{i}" for i in range(12)]


def batch(rng: random.Random, first: int, day: datetime.date, n: int = 60) -> list[tuple]:
    return [(first + i, day, rng.choice(NAMES), rng.choice(NAMES),
             round(rng.uniform(1, 100), 2)) for i in range(n)]


def more(oracle: Oracle, rng: random.Random, first: int, day: datetime.date) -> None:
    oracle.insert("transfers", batch(rng, first, day))
    oracle.insert("events", [(first + j, day, rng.choice("abc")) for j in range(20)])


def crash(conn: psycopg.Connection) -> int:
    """Every unlogged table of argus emptied, as crash recovery leaves them."""
    tables = [t for (t,) in conn.execute(
        "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.relpersistence = 'u' AND c.relkind = 'r' "
        "AND n.nspname LIKE 'argus%'")]
    conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(map(sql.SQL, tables))))
    return len(tables)


def persistence(conn: psycopg.Connection, schema: str) -> set[str]:
    return {p for (p,) in conn.execute(
        "SELECT DISTINCT c.relpersistence FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' "
        "AND c.relname !~ '_delta$'", (schema,))}


@pytest.fixture
def network(oracle: Oracle):
    rng = random.Random(51)
    oracle.create_stream("transfers", TRANSFERS, time_column="tran_date")
    oracle.create_table("accounts", {"id": "text", "label": "text"}, ["id"])
    oracle.insert("accounts", [(name, f"label {name}") for name in NAMES[:8]])
    day = datetime.date(2026, 1, 1)
    oracle.create_stream("events", {"id": "bigint", "t": "date", "k": "text"}, time_column="t")
    oracle.insert("transfers", batch(rng, 0, day))
    oracle.run()
    for name, query in QUERIES.items():
        oracle.register(name, query)
    # read by a window alone: its history is purged, and holds what the window needs
    oracle.register("windowed", "SELECT k, count(*) AS n FROM events "
                                "WHERE t > argus_now() - interval '48 hours' GROUP BY k")
    for i in range(1, 6):
        oracle.insert("transfers", batch(rng, 100 * i, day + datetime.timedelta(days=i)))
        oracle.insert("events", [(100 * i + j, day + datetime.timedelta(days=i),
                                  rng.choice("abc")) for j in range(20)])
        oracle.run()
    assert oracle.conn.execute("SELECT min(t) FROM argus_streams.events").fetchone()[0] \
        > day + datetime.timedelta(days=1)  # (purged)
    return oracle, rng


def test_a_new_network_keeps_its_derived_tables_unlogged(network):
    oracle, _ = network
    assert oracle.db.settings()["durability"] == "derived"
    assert persistence(oracle.conn, NETWORK_SCHEMA) == {"u"}
    assert persistence(oracle.conn, STREAMS_SCHEMA) == {"p"}  # the histories survive


def test_after_a_crash_answers_wait_for_the_rebuild_and_it_is_exact(network, fresh_dsn,
                                                                      login, caplog):
    oracle, rng = network
    role, writer_dsn = login("writer")
    oracle.db.grant("writer", role, stream="transfers")
    assert crash(oracle.conn) > len(QUERIES)
    with argus.connect(writer_dsn) as writer:  # a writer's cycle cannot rebuild: it says why
        with pytest.raises(CycleError, match="rebuilt after a crash"):
            writer.run()
    for read in ("SELECT * FROM argus_results.per_sender", "SELECT argus.run_cycle()"):
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState,
                           match="rebuilt after a crash"):
            with oracle.conn.transaction():
                oracle.conn.execute(read)
    assert any("lost in a crash" in t for t in status_tables(oracle.conn) if isinstance(t, str))
    with caplog.at_level(logging.INFO, logger="argus"):
        with argus.connect(fresh_dsn) as db:  # argus's owner connects: it rebuilds
            assert db.results("top2")
    said = [r.getMessage() for r in caplog.records]  # with progress, node by node
    nodes = int(re.search(r"rebuilding its (\d+) nodes", said[0]).group(1))
    assert nodes > len(QUERIES) and "the network is rebuilt" in said[-1]
    assert [m for m in said if "rebuilt node" in m][-1].count(f"{nodes} of {nodes}") == 1
    oracle.check()
    more(oracle, rng, 1000, datetime.date(2026, 1, 7))
    oracle.update("accounts", [("acct1", "renamed")])
    oracle.delete("accounts", ["acct2"])
    oracle.run()
    # a crash while a worker stays connected: its next cycle rebuilds, then runs
    crash(oracle.conn)
    more(oracle, rng, 2000, datetime.date(2026, 1, 8))
    oracle.run()
    assert persistence(oracle.conn, NETWORK_SCHEMA) == {"u"}


def test_durability_changes_on_a_live_network(network):
    oracle, rng = network
    oracle.db.configure(durability="logged")
    assert persistence(oracle.conn, NETWORK_SCHEMA) == {"p"}
    crash(oracle.conn)  # (only deltas and the marker are unlogged now: nothing to rebuild)
    oracle.insert("transfers", batch(rng, 1000, datetime.date(2026, 1, 7)))
    oracle.run()
    # a results view made before the crash check existed: guarded when turned derived
    (text,) = oracle.conn.execute(
        "SELECT pg_get_viewdef('argus_results.top2'::regclass)").fetchone()
    oracle.conn.execute(sql.SQL("CREATE OR REPLACE VIEW argus_results.top2 AS {}").format(
        sql.SQL(re.sub(r"\s*WHERE argus\.intact\(\)", "", text).rstrip("; "))))
    oracle.db.configure(durability="derived")
    assert persistence(oracle.conn, NETWORK_SCHEMA) == {"u"}
    oracle.check()
    crash(oracle.conn)
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
        with oracle.conn.transaction():
            oracle.conn.execute("SELECT * FROM argus_results.top2")
    oracle.register("late", "SELECT sender, max(amount) AS top FROM transfers GROUP BY sender")
    assert persistence(oracle.conn, NETWORK_SCHEMA) == {"u"}
    oracle.insert("transfers", batch(rng, 2000, datetime.date(2026, 1, 8)))
    oracle.run()


def test_random_queries_are_exact_after_crashes_between_any_two_steps(db):
    """The crash fuzzer: the algebra's random queries (tests/test_property_algebra),
    random batches with late rows, registrations, layouts and crashes in any order;
    after a crash (its unlogged tables emptied, as recovery leaves them) the next step
    that needs the network — a cycle, a registration — rebuilds it first, and every
    answer equals its SQL from scratch after every cycle."""
    from hypothesis.stateful import rule, run_state_machine_as_test

    from .test_property_algebra import Registering, machine_settings

    stats = {"queries": 0, "refused": 0, "cycles": 0, "crashes": 0}

    class Crashes(Registering):
        def __init__(self) -> None:
            super().__init__(db, stats)

        @rule()
        def crash(self):
            crash(db.conn)
            stats["crashes"] += 1

    run_state_machine_as_test(Crashes, settings=machine_settings(24, steps=14))
    assert stats["crashes"] and stats["cycles"]
    print(f"\ncrash fuzzer: {stats['queries']} generated queries ({stats['refused']} "
          f"refused), {stats['cycles']} cycles checked, {stats['crashes']} crashes")
