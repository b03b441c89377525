"""Streams and loads: all rows or none, errors that name the row."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

import argus

from .catalog_snapshot import snapshot


def test_insert_accepts_tuples_and_dicts_and_counts(transfers):
    n = transfers.insert("transfers", [
        (1, dt.date(2024, 1, 1), "a", "b", Decimal("1.50")),
        {"tran_id": 2, "sender": "c", "amount": 3},  # missing columns are NULL
    ])
    assert n == 2
    transfers.register("all_rows", "SELECT * FROM transfers")
    transfers.run()
    assert sorted(transfers.db.results("all_rows")) == [
        (1, dt.date(2024, 1, 1), "a", "b", Decimal("1.50")),
        (2, None, "c", None, Decimal("3.00"))]


@pytest.mark.parametrize("bad_rows, message", [
    ([(1, "2024-01-01", "a", "b", 1), (2, "not a date", "a", "b", 1)],
     "invalid input syntax for type date"),
    ([(1, "2024-01-01", "a", "b", 1), (2, "2024-01-01", "a", "b")], "row 2: 4 values for 5"),
    ([{"tran_id": 1, "amuont": 5}], "unknown columns ['amuont']"),
    (["just a string"], "row 1: expected a tuple or a dict"),
    ([(1, "2024-01-01", "a", "b", "12345678901234567")], "numeric field overflow"),
])
def test_a_bad_row_fails_the_whole_load(transfers, bad_rows, message):
    with pytest.raises(argus.LoadError) as raised:
        transfers.db.insert("transfers", bad_rows)
    assert message in str(raised.value)
    assert "nothing was loaded" in str(raised.value)
    assert transfers.conn.execute("SELECT count(*) FROM argus_inbox.transfers").fetchone() == (0,)


def test_copy_errors_name_the_line(transfers):
    rows = [(i, "2024-01-01", "a", "b", 1) for i in range(5)] + [(5, "2024-13-45", "a", "b", 1)]
    with pytest.raises(argus.LoadError, match="line 6"):
        transfers.db.insert("transfers", rows)


def test_not_null_columns_are_enforced_at_load(db):
    db.create_stream("events", {"id": "bigint NOT NULL", "note": "text"})
    with pytest.raises(argus.LoadError, match="null value in column \"id\""):
        db.insert("events", [(1, "ok"), (None, "bad")])
    assert db.streams()[0].columns == (("id", "bigint"), ("note", "text"))


def test_unknown_stream(db):
    with pytest.raises(argus.UnknownStreamError, match="unknown stream 'nope'"):
        db.insert("nope", [(1,)])


def test_stream_types_are_recorded_as_postgres_spells_them(db):
    db.create_stream("s", {"a": "numeric(14,2)", "b": "timestamp with time zone",
                           "c": "character varying(10)", "d": "int[]", "e": "double precision"})
    assert db.streams()[0].columns == (
        ("a", "numeric(14,2)"), ("b", "timestamp with time zone"),
        ("c", "character varying(10)"), ("d", "integer[]"), ("e", "double precision"))


def test_create_stream_is_transactional(db):
    before = snapshot(db.conn)
    with pytest.raises(argus.InvalidNameError):
        db.create_stream("s", {"a": "int", "b": "bogus_type"})
    assert snapshot(db.conn) == before


def test_a_load_id_loads_at_most_once(transfers):
    rows = [(1, "2024-01-01", "a", "b", 5), (2, "2024-01-01", "a", "b", 6)]
    first = transfers.db.load("transfers", rows, load_id="file-001")
    again = transfers.db.load("transfers", rows, load_id="file-001")
    assert (first.rows, first.duplicate) == (2, False)
    assert (again.rows, again.duplicate) == (0, True)
    assert transfers.db.insert("transfers", rows, load_id="file-001") == 0
    assert transfers.conn.execute("SELECT count(*) FROM argus_inbox.transfers").fetchone() == (2,)
    assert transfers.conn.execute(
        "SELECT load_id, stream, rows, source FROM argus.loads").fetchall() == [
        ("file-001", "transfers", 2, "copy")]


def test_a_failed_load_with_an_id_can_be_retried(transfers):
    bad = [(1, "2024-01-01", "a", "b", 5), (2, "not a date", "a", "b", 6)]
    with pytest.raises(argus.LoadError, match="line 2"):
        transfers.db.load("transfers", bad, load_id="file-002")
    assert transfers.db.loads() == []  # the id was not recorded: a retry loads
    good = [(1, "2024-01-01", "a", "b", 5), (2, "2024-01-02", "a", "b", 6)]
    assert transfers.db.load("transfers", good, load_id="file-002").rows == 2


def test_a_load_is_one_statement_on_an_idle_connection(db, tmp_path):
    """A load without an id is one COPY, its own transaction (a bare COPY's cost): what
    the session sends (libpq's protocol trace) is the COPY and its rows, no catalog
    query, BEGIN, SAVEPOINT or COMMIT; and it takes one transaction id, where a
    savepoint that wrote would take two."""
    db.create_stream("events", {"id": "bigint", "note": "text"})
    db.insert("events", [(0, "reads the stream's columns once")])

    def xid() -> int:
        return int(db.conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0])

    start = xid()
    trace = tmp_path / "trace"
    with trace.open("w") as out:
        db.conn.pgconn.trace(out.fileno())
        try:
            assert db.insert("events", [(1, "a"), (2, "b")]) == 2
        finally:
            db.conn.pgconn.untrace()
    sent = [line.split("\t")[3] for line in trace.read_text().splitlines()
            if line.split("\t")[1] == "F"]
    assert sent == ["Query", "CopyData", "CopyDone"], trace.read_text()
    assert '"COPY "argus_inbox"."events" FROM STDIN"' in trace.read_text()
    assert xid() - start == 2  # the load's, then this call's
    assert db.conn.execute("SELECT count(*) FROM argus_inbox.events").fetchone() == (3,)


def test_a_load_inside_the_callers_transaction(db):
    """Within the caller's transaction the load commits with it, and a failed load does
    not abort it (a savepoint)."""
    db.create_stream("events", {"id": "bigint NOT NULL", "note": "text"})
    with db.conn.transaction():
        db.insert("events", [(1, "kept")])
        with pytest.raises(argus.LoadError, match="null value"):
            db.insert("events", [(2, "ok"), (None, "bad")])
        db.insert("events", [(3, "kept too")])
    assert db.conn.execute("SELECT id FROM argus_inbox.events ORDER BY id").fetchall() == [
        (1,), (3,)]
    with pytest.raises(RuntimeError):
        with db.conn.transaction():
            db.insert("events", [(4, "rolled back")])
            raise RuntimeError
    assert db.conn.execute("SELECT count(*) FROM argus_inbox.events").fetchone() == (2,)


def test_a_stream_redeclared_by_another_session_is_loaded_as_it_is_now(db, fresh_dsn):
    """A session reads a stream's columns once; when another session re-declares the
    stream, tuples still go in its column order as it is now (never into the columns of
    the stream as it was), rows of other shapes are checked against its columns as they
    are now, and a stream gone is named."""
    db.create_stream("events", {"x": "int", "y": "int"})
    db.insert("events", [(0, 0)])

    def redeclare(columns: dict[str, str] | None) -> None:
        with argus.connect(fresh_dsn) as other:
            other.drop_stream("events")
            if columns:
                other.create_stream("events", columns)

    redeclare({"y": "int", "x": "int"})  # the same columns, reordered
    assert db.insert("events", [(1, 2)]) == 1
    assert db.conn.execute("SELECT y, x FROM argus_inbox.events").fetchall() == [(1, 2)]
    redeclare({"y": "int", "x": "int", "z": "int"})
    assert db.insert("events", iter([(1, 2, 3)])) == 1
    assert db.insert("events", [{"z": 4}]) == 1
    assert db.conn.execute("SELECT y, x, z FROM argus_inbox.events").fetchall() == [
        (1, 2, 3), (None, None, 4)]
    redeclare({"y": "int", "x": "int"})
    with pytest.raises(argus.LoadError, match="row 1: 3 values for 2 columns"):
        db.insert("events", [(1, 2, 3)])  # the width checked against the stream as it is
    redeclare({"a": "int", "b": "int", "c": "int"})
    with pytest.raises(argus.LoadError, match="row 1: 2 values for 3 columns"):
        db.insert("events", [(1, 2)])  # as the session last read it, COPY finds out
    redeclare(None)
    with pytest.raises(argus.UnknownStreamError, match="unknown stream 'events'"):
        db.insert("events", [(4, 5, 6)])
