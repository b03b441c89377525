"""Streams no query reads (idle) leave their rows waiting in their inboxes until they
grow large or a query reads them, then have them written to their histories once, in
the claim that takes every stream's rows under one snapshot; cycles run at READ
COMMITTED; the cycle report lists the queries whose answers changed."""

from __future__ import annotations

import datetime as dt
import threading
import time

import psycopg
import pytest
from psycopg import sql

import argus

DAY = dt.date(2024, 1, 1)


def rows(start: int, n: int, day: dt.date = DAY) -> list[tuple]:
    return [(i, day, f"s{i % 7}", f"r{i % 5}", 10 * i) for i in range(start, start + n)]


def count(db: argus.Argus, table: str) -> int:
    return db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608


@pytest.mark.parametrize("size", [10, 3000], ids=["claimed", "taken-whole"])
def test_an_idle_stream_is_appended_to_its_history_once(transfers, size):
    """Every cycle appends an idle stream's rows straight to its history (its delta table
    stays empty), whether it claims them row by row or takes the inbox whole; rows too
    far ahead of the clock are held back as for any stream; a read stream in the same
    cycle is claimed as before. (unread_inbox_bytes null: claimed at every cycle.)"""
    db = transfers.db
    db.configure(unread_inbox_bytes=None)
    transfers.create_stream("other", {"id": "int", "t": "timestamptz"}, time_column="t")
    transfers.register("small", "SELECT id FROM other WHERE id < 5")
    ahead = dt.date.today() + dt.timedelta(days=30)
    transfers.insert("transfers", rows(0, size) + rows(size, 2, day=ahead))
    transfers.insert("other", [(i, dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc))
                               for i in range(10)])
    report = transfers.run()
    assert report.rows_in == {"other": 10, "transfers": size}
    assert report.quarantined == {"transfers": 2}
    assert count(db, "argus_streams.transfers") == size
    assert count(db, "argus_inbox.transfers") == 0
    (node,) = db.conn.execute("SELECT node_id FROM argus_catalog.streams "
                              "WHERE name = 'transfers'").fetchone()
    assert count(db, f"argus_net.n{node}_delta") == 0
    assert db.conn.execute("SELECT argus.clock_now()::date").fetchone()[0] == DAY + \
        dt.timedelta(days=1)  # the latest event time claimed, read stream or idle


@pytest.mark.parametrize("locked", [False, True], ids=["claimed", "taken-whole"])
def test_an_idle_stream_waits_in_its_inbox_until_it_grows_or_is_read(transfers, locked,
                                                                      caplog):
    """An idle stream's rows wait in its inbox, written once, and move no clock, until
    the inbox passes unread_inbox_bytes: then one cycle claims them all (quarantine
    included), and the clock moves to them. A query registered over an idle stream
    whose rows wait has a cycle claim them first: its answer covers every row loaded
    before it, exactly."""
    db = transfers.db
    db.configure(truncate_inbox_bytes=1 if locked else 1 << 40)
    transfers.create_stream("other", {"id": "int", "t": "timestamptz"}, time_column="t")
    transfers.register("small", "SELECT id FROM other WHERE id < 5")
    before = dt.datetime(2023, 12, 31, tzinfo=dt.timezone.utc)
    transfers.insert("transfers", rows(0, 500))
    transfers.insert("other", [(i, before) for i in range(10)])
    assert transfers.run().rows_in == {"other": 10, "transfers": 0}
    assert (count(db, "argus_inbox.transfers"), count(db, "argus_streams.transfers")) == (500, 0)
    assert db.conn.execute("SELECT argus.clock_now()").fetchone()[0] == before

    db.configure(unread_inbox_bytes="8kB")  # smaller than the 500 rows waiting
    ahead = dt.date.today() + dt.timedelta(days=30)
    transfers.insert("transfers", rows(500, 10) + rows(510, 2, day=ahead))
    report = transfers.run()
    assert report.rows_in == {"other": 0, "transfers": 510}
    assert report.quarantined == {"transfers": 2}
    assert (count(db, "argus_inbox.transfers"), count(db, "argus_streams.transfers")) == (0, 510)
    assert db.conn.execute("SELECT argus.clock_now()::date").fetchone()[0] == DAY

    db.configure(unread_inbox_bytes="16MB")
    transfers.insert("transfers", rows(600, 40))
    transfers.insert("other", [(1, before)])
    assert transfers.run().rows_in == {"other": 1, "transfers": 0}
    with caplog.at_level("INFO", logger="argus"):
        transfers.register("by_sender", "SELECT sender, count(*), sum(amount) FROM transfers "
                                        "GROUP BY sender")  # the oracle checks it has all 550
    assert any("rows wait in the inbox of transfers, which no query read until 'by_sender'"
               in r.getMessage() for r in caplog.records)  # (it says why it ran a cycle)
    assert (count(db, "argus_inbox.transfers"), count(db, "argus_streams.transfers")) == (0, 550)
    transfers.insert("transfers", rows(700, 5))
    assert transfers.run().rows_in == {"other": 0, "transfers": 5}  # read now: every cycle


def test_an_inbox_is_taken_whole_for_a_large_batch_or_when_its_dead_rows_pile_up(
        transfers, monkeypatch):
    """A batch that grew the inbox by more than truncate_inbox_bytes is read in place and
    the inbox truncated; a small one is deleted row by row (a TRUNCATE's new file costs
    more), until the dead rows left pass 16 times the setting: then it is truncated.
    (Where no VACUUM frees them first: a cycle of argus's owner vacuums an inbox whose
    dead rows pile up, argus.tidy; here it does not.)"""
    monkeypatch.setattr("argus.tidy.DEAD_ROWS", 10**12)
    db = transfers.db
    db.configure(truncate_inbox_bytes=64 * 1024)
    transfers.register("big", "SELECT tran_id, amount FROM transfers WHERE amount > 5000")

    def size() -> int:
        return db.conn.execute("SELECT pg_relation_size('argus_inbox.transfers')").fetchone()[0]

    # an autovacuum (on in the embedded server) would reclaim the dead rows, or truncate
    # the emptied file after a cycle and pass for the claim's TRUNCATE
    db.conn.execute("ALTER TABLE argus_inbox.transfers SET (autovacuum_enabled = false)")
    db.conn.commit()
    transfers.insert("transfers", rows(0, 3000))
    transfers.run()
    assert size() == 0
    sizes = []
    for batch in range(40):
        transfers.insert("transfers", rows(3000 + 500 * batch, 500))
        transfers.run()
        sizes.append(size())
        if not sizes[-1]:
            break
    assert sizes[-1] == 0 and len(sizes) > 10, sizes
    assert sizes[:-1] == sorted(sizes[:-1]) and sizes[-2] > 16 * 64 * 1024 - 64 * 1024


def test_a_transaction_over_a_read_and_an_idle_stream_is_claimed_whole(db, fresh_dsn):
    """All streams are claimed by one statement, under one snapshot: a load committed
    while the claim waits (here on a row lock) is claimed by the next cycle, in every
    stream it wrote, never half by this one."""
    db.configure(purge=False, unread_inbox_bytes=None)
    for name in ("r", "i"):  # r read by a windowed query, i idle
        db.create_stream(name, {"id": "int", "t": "timestamptz"}, time_column="t")
    db.register_query("w", "SELECT id, t FROM r WHERE t > argus_now() - interval '10 minutes'")
    noon = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)
    db.insert("r", [(1, noon)])
    db.run()
    db.insert("r", [(99, None)])
    reports = {}
    with psycopg.connect(fresh_dsn) as blocker:
        blocker.execute("SELECT * FROM argus_inbox.r WHERE id = 99 FOR UPDATE")
        cycle = threading.Thread(target=lambda: reports.setdefault("run", db.run()))
        cycle.start()
        deadline = time.monotonic() + 10
        with psycopg.connect(fresh_dsn, autocommit=True) as watcher:
            while not watcher.execute(  # until the claim waits for the row lock
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s "
                    "AND wait_event_type = 'Lock'", (db.conn.info.backend_pid,)).fetchone()[0]:
                assert time.monotonic() < deadline, "the cycle never waited for the row lock"
                time.sleep(0.01)
        with argus.connect(fresh_dsn) as loader, loader.conn.transaction():
            later = noon + dt.timedelta(minutes=30)
            loader.insert("r", [(2, later)])
            loader.insert("i", [(2, later)])
        blocker.commit()
        cycle.join()
    assert reports["run"].rows_in == {"i": 0, "r": 1}  # row 99 only
    assert db.results("w") == [(1, noon)]
    assert db.run().rows_in == {"i": 1, "r": 1}
    assert db.results("w") == [(2, noon + dt.timedelta(minutes=30))]


def test_a_cycle_refuses_to_run_under_repeatable_read(transfers, fresh_dsn):
    """Its snapshot would predate the wait for the cycle lock, and a load committed
    meanwhile would be truncated with the inbox unseen: refused, naming the fix."""
    transfers.db.configure(unread_inbox_bytes=None)
    transfers.insert("transfers", rows(0, 3000))
    with psycopg.connect(fresh_dsn) as psql:
        psql.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(psycopg.errors.RaiseException, match="READ COMMITTED, not "
                                                                 "REPEATABLE READ"):
            psql.execute("SELECT argus.run_cycle()")
    transfers.conn.execute(sql.SQL("ALTER DATABASE {} SET default_transaction_isolation "
                                   "= 'repeatable read'").format(
        sql.Identifier(transfers.conn.info.dbname)))
    with argus.connect(fresh_dsn) as again:  # argus's own sessions run at READ COMMITTED
        assert again.run().rows_in == {"transfers": 3000}
    assert count(transfers.db, "argus_streams.transfers") == 3000


def test_a_query_reading_the_clock_is_reported_when_only_the_clock_moved(db):
    """Its answer changes with the clock even when its node did not: the cycle report
    lists it, with what its changes view holds."""
    db.configure(unread_inbox_bytes=None)  # the idle stream is claimed, and moves the clock
    for name in ("r", "other"):
        db.create_stream(name, {"id": "int", "t": "timestamptz"}, time_column="t")
    db.register_query("age", "SELECT id, argus_now() - t AS age FROM r")
    noon = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)
    db.insert("r", [(1, noon), (2, noon)])
    db.run()
    db.insert("other", [(1, noon + dt.timedelta(hours=1))])  # moves the clock only
    report = db.run()
    changes = db.new_results("age")
    assert (report.new_rows["age"], report.retracted["age"]) == (
        sum(c[-1] > 0 for c in changes), sum(c[-1] < 0 for c in changes)) == (2, 2)
