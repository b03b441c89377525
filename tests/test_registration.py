"""Registration: bad input gets a clear error naming what is wrong, and changes nothing."""

from __future__ import annotations

import datetime

import pytest

import argus

from .catalog_snapshot import snapshot
from .conftest import TRANSFERS
from .fixtures import cases

REFUSALS = cases("refusals.txt")


@pytest.mark.parametrize("case", REFUSALS, ids=[c["title"] for c in REFUSALS])
def test_refused_queries_name_the_problem_and_change_nothing(transfers, case):
    transfers.register("existing", "SELECT tran_id FROM transfers WHERE amount > 1")
    before = snapshot(transfers.conn)
    error_class, _, fragment = case["error"].partition(" ")
    for evaluate in case.get("evaluate", "incremental").split():
        with pytest.raises(getattr(argus, error_class)) as raised:
            transfers.db.register_query("q", case["sql"], evaluate=evaluate)
        assert fragment in str(raised.value), evaluate
        assert snapshot(transfers.conn) == before


HOSTILE_NAMES = ["", "a b", 'q"; DROP TABLE x; --', "q'", "1abc", "x" * 64, "é",
                 "argus_q", "pg_q", "a;b", "a-b", None, 42]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=repr)
def test_hostile_query_names_are_refused(transfers, name):
    before = snapshot(transfers.conn)
    with pytest.raises(argus.InvalidNameError):
        transfers.db.register_query(name, "SELECT tran_id FROM transfers")
    assert snapshot(transfers.conn) == before


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=repr)
def test_hostile_stream_and_column_names_are_refused(db, name):
    before = snapshot(db.conn)
    with pytest.raises(argus.InvalidNameError):
        db.create_stream(name, {"a": "int"})
    with pytest.raises(argus.InvalidNameError):
        db.create_stream("s", {name: "int"})
    assert snapshot(db.conn) == before


def test_names_are_folded_like_unquoted_identifiers(transfers):
    info = transfers.register("BigOnes", "SELECT tran_id FROM Transfers WHERE amount > 1")
    assert info.name == "bigones"
    assert transfers.db.results("BIGONES") == []
    with pytest.raises(argus.DuplicateNameError, match="already exists"):
        transfers.db.register_query("bigones", "SELECT 1 FROM transfers")


def test_duplicate_query_name_changes_nothing(transfers):
    transfers.register("q", "SELECT tran_id FROM transfers WHERE amount > 1")
    before = snapshot(transfers.conn)
    with pytest.raises(argus.DuplicateNameError):
        transfers.db.register_query("q", "SELECT tran_id FROM transfers WHERE amount > 2")
    assert snapshot(transfers.conn) == before


def test_unknown_query_errors(transfers):
    for call in (transfers.db.unregister_query, transfers.db.results, transfers.db.new_results,
                 transfers.db.explain):
        with pytest.raises(argus.UnknownQueryError, match="unknown query 'nope'"):
            call("nope")


def test_a_long_hostile_predicate_is_quoted_not_executed(transfers):
    evil = "x'); DROP TABLE argus_streams.transfers; --"
    quoted = evil.replace("'", "''")
    transfers.register("evil", f"SELECT tran_id FROM transfers WHERE sender = '{quoted}'")
    transfers.insert("transfers", [(1, "2024-01-01", evil, "b", 1), (2, "2024-01-01", "a", "b", 1)])
    transfers.run()
    assert transfers.db.results("evil") == [(1,)]


def test_registration_info_and_explain(transfers):
    info = transfers.register("big", "SELECT tran_id, amount * 2 AS dbl FROM transfers "
                                     "WHERE amount > 10")
    assert info.columns == [("tran_id", "bigint"), ("dbl", "numeric")]
    assert [(n.kind, n.created) for n in info.nodes] == [("stream", False), ("select", True)]
    text = transfers.db.explain("big")
    assert '"t1"."amount" > 10' in text and "insert-only path" in text
    assert "INSERT INTO" not in text and "with --code" in text  # the short form
    text = transfers.db.explain("big", code=True)
    assert "INSERT INTO" in text and "CREATE VIEW" in text


def test_streams_refuse_bad_declarations(db):
    before = snapshot(db.conn)
    with pytest.raises(argus.InvalidNameError, match="unknown or unsupported type"):
        db.create_stream("s", {"a": "text); DROP TABLE x; --"})
    with pytest.raises(argus.InvalidNameError, match="unknown or unsupported type"):
        db.create_stream("s", {"a": "no_such_type"})
    with pytest.raises(argus.InvalidNameError, match="unknown or unsupported type"):
        db.create_stream("s", {"a": "interval(x)"})
    with pytest.raises(argus.InvalidNameError, match="time column 'b'"):
        db.create_stream("s", {"a": "int"}, time_column="b")
    with pytest.raises(argus.InvalidNameError, match="non-empty dict"):
        db.create_stream("s", {})
    with pytest.raises(argus.DuplicateNameError, match="declared twice"):
        db.create_stream("s", {"a": "int", "A": "int"})
    assert snapshot(db.conn) == before
    db.create_stream("s", {"a": "int", "t": "timestamptz"}, time_column="t")
    with pytest.raises(argus.DuplicateNameError, match="already exists .*if_not_exists"):
        db.create_stream("S", {"a": "int"})
    # issue 54: kept when declared the same, however its types are spelled
    kept = db.create_stream("s", {"A": "integer", "t": "timestamp with time zone"},
                            time_column="t", if_not_exists=True)
    assert kept.columns == (("a", "integer"), ("t", "timestamp with time zone"))
    # an interval's precision (sqlglot wrote interval(0) as INTERVAL 0; a helper)
    assert db.create_stream("p", {"iv": "interval(0)"}).columns == (("iv", "interval(0)"),)
    for columns, time_column in (({"a": "bigint", "t": "timestamptz"}, "t"),
                                 ({"a": "int", "t": "timestamptz"}, None),
                                 ({"a": "int"}, None)):
        with pytest.raises(argus.DuplicateNameError, match="declared otherwise"):
            db.create_stream("s", columns, time_column=time_column, if_not_exists=True)


def test_dropping_a_stream_in_use_is_refused(transfers):
    transfers.register("q", "SELECT tran_id FROM transfers")
    with pytest.raises(argus.ArgusError, match="used by queries q"):
        transfers.db.drop_stream("transfers")
    transfers.unregister("q")
    transfers.db.drop_stream("transfers")
    assert transfers.db.streams() == []


def test_a_registration_failing_in_its_backfill_changes_nothing(transfers):
    transfers.insert("transfers", [(1, "2024-01-01", "a", "b", 0)])
    transfers.run()
    before = snapshot(transfers.conn)
    with pytest.raises(argus.QueryError, match="division by zero"):
        transfers.db.register_query("inv", "SELECT tran_id FROM transfers WHERE 100 / amount > 1")
    assert snapshot(transfers.conn) == before


@pytest.mark.parametrize("query", [
    "SELECT a.tran_id, (SELECT max(amount) FROM transfers), "
    "(SELECT count(*) FROM transfers b WHERE b.sender = a.receiver) FROM transfers a",
    "SELECT tran_id, a.sender, b.amount FROM transfers a FULL JOIN transfers b USING (tran_id)",
    "SELECT a.sender, b.receiver FROM transfers a RIGHT JOIN transfers b ON a.tran_id = b.tran_id",
    "SELECT tran_id, EXISTS (SELECT 1 FROM transfers b WHERE b.sender = a.receiver) "
    "FROM transfers a",
    "SELECT sender, rank() OVER (PARTITION BY sender ORDER BY amount), "
    "sum(amount) OVER (ORDER BY tran_id) FROM transfers",
    "SELECT sender, count(*) FILTER (WHERE amount > 5), sum(amount) FILTER (WHERE amount < 5) "
    "FROM transfers GROUP BY sender",
])
def test_rewritten_queries_keep_postgresqls_column_names(transfers, query):
    """Queries argus rewrites before planning them (unnested subqueries, outer joins,
    FILTER) name their answer's columns as PostgreSQL names the query's."""
    transfers.register("q", query)
    expected = [c.name for c in transfers.conn.execute(
        f"SELECT * FROM ({query}) AS q LIMIT 0".replace("transfers", "argus_streams.transfers")
    ).description]
    got = [c.name for c in transfers.conn.execute("SELECT * FROM argus_results.q LIMIT 0"
                                                  ).description]
    assert got == expected


def test_a_slow_backfill_says_so_node_by_node(transfers, caplog, monkeypatch):
    """A sign of life on long work: each node built slower than SLOW_BUILD_SECONDS is
    said to be as it is built (argus's log, which the command line prints)."""
    import logging

    from argus.network import apply

    monkeypatch.setattr(apply, "SLOW_BUILD_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="argus"):
        info = transfers.register("per_sender", "SELECT sender, count(*) AS n FROM transfers "
                                                "GROUP BY sender")
    built = [r.getMessage() for r in caplog.records if "built from its parents" in r.getMessage()]
    assert len(built) == len([n for n in info.nodes if n.created])


def test_long_cycles_and_loads_say_how_far_they_got(transfers, caplog, monkeypatch):
    """Signs of life during long work: a node of a cycle that takes longer than
    SLOW_NODE_MS says so as the cycle runs (a NOTICE, passed on to argus's log, which
    the command line prints), and a long load says how many rows it copied so far."""
    import logging

    from argus import program, streams

    monkeypatch.setattr(program, "SLOW_NODE_MS", -1)  # (every node is slow)
    monkeypatch.setattr(streams, "PROGRESS_ROWS", 10)
    monkeypatch.setattr(streams, "PROGRESS_SECONDS", 0.0)
    info = transfers.register("per_sender", "SELECT sender, count(*) AS n FROM transfers "
                                            "GROUP BY sender")
    rows = [(i, datetime.date(2026, 1, 1), f"s{i % 4}", "r", 1) for i in range(35)]
    with caplog.at_level(logging.INFO, logger="argus"):
        transfers.insert("transfers", rows)  # (plain tuples: copied in slices)
        transfers.insert("transfers", [dict(zip(TRANSFERS, r)) for r in rows[:20]])
        transfers.run()
    said = [r.getMessage() for r in caplog.records]
    copied = [m for m in said if "copied into the inbox of stream 'transfers'" in m]
    assert [m.split(" rows")[0] for m in copied] == ["argus: 10", "argus: 20", "argus: 30",
                                                     "argus: 35", "argus: 10", "argus: 20"]
    ours = {n.id for n in info.nodes}
    computed = {int(m.split()[2]) for m in said if " computed " in m}
    maintained = {int(m.split()[2]) for m in said if " maintained its history " in m}
    assert ours & computed and ours & maintained, said


def test_a_name_registered_again_with_other_columns_reads_in_a_long_lived_session(
        transfers, fresh_dsn):
    """A session that read an answer often (psycopg prepares a statement it ran five
    times) reads it after another session registered the name again with other columns
    (it failed: "cached plan must not change result type"; found by a helper)."""
    db = transfers.db
    db.register_query("q", "SELECT sender, count(*) AS n FROM transfers GROUP BY sender")
    db.insert("transfers", [(1, "2024-01-02", "a", "b", 5)])
    db.run()
    for _ in range(6):
        assert db.results("q") == [("a", 1)] and db.new_results("q") == [("a", 1, 1)]
        with db.conn.transaction():  # (a read in the caller's transaction: its own plan)
            assert db.new_results("q") == [("a", 1, 1)]
    with argus.connect(fresh_dsn) as other:
        other.unregister_query("q")
        other.register_query("q", "SELECT sender, max(amount) AS m, count(*) AS n "
                                  "FROM transfers GROUP BY sender")
    with db.conn.transaction(force_rollback=True):  # (inside the caller's transaction:
        with pytest.raises(argus.QueryError, match="roll the transaction back"):  # aborted)
            db.new_results("q")
    assert [tuple(map(str, r)) for r in db.results("q")] == [("a", "5.00", "1")]


def test_a_preview_shows_what_registering_would_make_and_keeps_nothing(transfers):
    """preview_query registers, explains and rolls back: the nodes it would make and
    share are named, and the database is as before, rows waiting in an inbox no query
    read included (the registration's own cycle claims them, and is rolled back): the
    query registered after it covers them."""
    rows = [(i, "2024-01-05", f"a{i % 5}", f"a{i % 3}", i * 10) for i in range(1, 60)]
    transfers.insert("transfers", rows)  # (waiting: no query reads the stream yet)
    before = snapshot(transfers.conn)
    query = "SELECT sender, count(*) AS n, max(amount) AS hi FROM transfers " \
            "WHERE amount > 100 GROUP BY sender"
    info, explained = transfers.db.preview_query("per_sender", query)
    assert snapshot(transfers.conn) == before
    assert [n.kind for n in info.nodes if n.created] == ["select", "aggregate"]
    assert "query per_sender" in explained and "group by" in explained
    transfers.register("big", "SELECT tran_id, sender FROM transfers WHERE amount > 100")
    before = snapshot(transfers.conn)
    info, _ = transfers.db.preview_query("per_sender", query)
    assert snapshot(transfers.conn) == before
    shared = [n.kind for n in info.nodes if not n.created and n.kind != "stream"]
    assert shared == ["select"] and [n.kind for n in info.nodes if n.created] == ["aggregate"]
    transfers.register("per_sender", query)  # (the oracle: it covers the rows that waited)
    transfers.insert("transfers", [(100, "2024-01-06", "a1", "a2", 5000)])
    transfers.run()
    with pytest.raises(argus.UnknownColumnError, match="nosuch"):
        transfers.db.preview_query("bad", "SELECT nosuch FROM transfers")
