"""Streams no query reads (idle): their rows are written to their histories once, at
every cycle by default, or in bulk past settings.lazy_history_bytes; a query registered
over one reads them like any rows. The oracle mirrors every row loaded."""

from __future__ import annotations

import datetime as dt

import pytest

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
    cycle is claimed as before."""
    db = transfers.db
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


def test_a_lazy_idle_stream_waits_then_is_appended_in_bulk(transfers):
    db = transfers.db
    db.configure(lazy_history_bytes="64kB")
    transfers.insert("transfers", rows(0, 100))
    assert transfers.run().rows_in == {}
    assert count(db, "argus_streams.transfers") == 0
    assert count(db, "argus_inbox.transfers") == 100  # waiting, as `argus status` says
    transfers.insert("transfers", rows(100, 2000))  # past 64 kB
    assert transfers.run().rows_in == {"transfers": 2100}
    assert count(db, "argus_streams.transfers") == 2100
    assert count(db, "argus_inbox.transfers") == 0


def test_a_query_over_a_lazy_idle_stream_reads_what_waits_at_the_next_cycle(transfers):
    """Rows waiting in an idle stream's inbox are like rows loaded since the last cycle:
    a query registered meanwhile answers over the history, and the next cycle claims
    them for it (and them only once)."""
    db = transfers.db
    db.configure(lazy_history_bytes="64kB")
    transfers.insert("transfers", rows(0, 300))
    transfers.run()
    transfers.insert("transfers", rows(300, 3000))
    transfers.run()  # appended in bulk
    transfers.insert("transfers", rows(3300, 50))
    transfers.run()  # waits
    info = db.register_query("big", "SELECT tran_id, amount FROM transfers WHERE amount > 100")
    assert len(db.results(info.name)) == 3300 - 11  # the history only
    report = transfers.run()  # a read stream now: claims the 50 rows that waited
    assert report.rows_in == {"transfers": 50}
    transfers.check()
    transfers.insert("transfers", rows(3350, 10))
    transfers.run()
    transfers.check()
    assert count(db, "argus_streams.transfers") == 3360
