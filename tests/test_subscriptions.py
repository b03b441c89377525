"""Continuous results that reach the application (argus.subscriptions): a consumer's
copy of an answer, built from the answer once and then from each cycle's logged
changes, equals the answer after every cycle; one that crashes resumes with every
change once; each committed cycle notifies LISTEN argus_cycle; a log that no longer
keeps a reader's changes says so."""

from __future__ import annotations

import datetime
import json
import random
import subprocess
import sys
import time
from collections import Counter

import psycopg
import pytest
from click.testing import CliRunner

from argus.cli import main
from argus.errors import ChangesLostError, UnknownQueryError

from .conftest import TRANSFERS
from .oracle import _normalize
from .test_durability import QUERIES as DURABILITY_QUERIES

QUERIES = {name: DURABILITY_QUERIES[name] for name in ("per_sender", "top2")} | {
    "big": "SELECT DISTINCT receiver FROM transfers WHERE amount > 90"}
NAMES = [f"acct{i}" for i in range(8)]


def bag(rows) -> Counter:
    return Counter(tuple(_normalize(v) for v in row) for row in rows)


def apply(copy: Counter, rows) -> None:
    for *values, sign in rows:
        copy[tuple(_normalize(v) for v in values)] += sign
        assert copy[tuple(_normalize(v) for v in values)] >= 0, "a retraction of a row not held"
    for key in [k for k, n in copy.items() if n == 0]:
        del copy[key]


def load(oracle, rng: random.Random, first: int, n: int = 40) -> None:
    day = datetime.date(2026, 1, 1) + datetime.timedelta(days=first // 100)
    oracle.insert("transfers", [(first + i, day, rng.choice(NAMES), rng.choice(NAMES),
                                 round(rng.uniform(1, 100), 2)) for i in range(n)])


@pytest.fixture
def subscribed(oracle):
    oracle.create_stream("transfers", TRANSFERS, time_column="tran_date")
    for name, text in QUERIES.items():
        oracle.register(name, text)
    rng = random.Random(53)
    load(oracle, rng, 0)
    oracle.run()
    return oracle, rng


def test_a_consumer_that_crashes_resumes_with_every_change_once(subscribed):
    """Each consumer's copy equals the answer after every cycle. One 'crashes' after
    receiving a cycle's changes and before asking for more (they were not
    acknowledged): the resumed subscription delivers that cycle again, the same rows,
    and nothing twice once applied by position."""
    oracle, rng = subscribed
    db = oracle.db
    copies = {name: Counter() for name in QUERIES}
    applied = dict.fromkeys(QUERIES, -1)
    crashed, redelivered = None, 0
    for cycle in range(1, 9):
        for name in copies:
            seen = []
            for changes in db.subscribe(name, consumer="app", timeout=0.2):
                if changes.position > applied[name]:
                    apply(copies[name], changes.rows)
                    applied[name] = changes.position
                else:  # the one a crash left unacknowledged: the same again
                    assert (name, changes.position, bag(changes.rows)) == crashed
                    redelivered += 1
                seen.append(changes.position)
                if cycle % 2 == 0 and name == "top2" and not changes.snapshot:
                    crashed = (name, changes.position, bag(changes.rows))
                    break  # gone before acknowledging it
            assert seen == sorted(set(seen))
            assert copies[name] == bag(db.results(name)), f"{name} after cycle {cycle}"
        load(oracle, rng, cycle * 100, n=rng.choice([0, 5, 40]))
        if cycle == 5:  # a query dropped while the others are followed
            oracle.unregister("big")
            del copies["big"]
        oracle.run()
    assert redelivered >= 2


def test_sql_consumers_acknowledge_in_their_own_transaction(subscribed):
    """From SQL: changes_since gives each change as jsonb after a position; a consumer
    that applies them and acknowledges in one transaction, and crashes (rolls back)
    once, holds every change exactly once."""
    oracle, rng = subscribed
    db = oracle.db
    conn = db.conn
    _, new = conn.execute("SELECT * FROM argus.subscribe('per_sender', 'sql')").fetchone()
    assert new  # a consumer starts from the answer, read in one snapshot with its position
    conn.execute("CREATE TABLE copy (sender text PRIMARY KEY, n bigint, total numeric, "
                 "receivers bigint)")
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute("INSERT INTO copy SELECT * FROM argus_results.per_sender")
        conn.execute("SELECT argus.acknowledge('per_sender', 'sql', argus.position())")
    assert not conn.execute("SELECT * FROM argus.subscribe('per_sender', 'sql')").fetchone()[1]
    for cycle in range(1, 6):
        load(oracle, rng, cycle * 100)
        oracle.run()
        for attempt in ("crash", "commit"):
            try:
                with conn.transaction():
                    (start,) = conn.execute("SELECT position FROM argus_catalog.consumers "
                                            "WHERE consumer = 'sql'").fetchone()
                    rows = conn.execute("SELECT * FROM argus.changes_since('per_sender', %s)",
                                        (start,)).fetchall()
                    for _, sign, change in rows:
                        if sign < 0:
                            conn.execute("DELETE FROM copy WHERE sender = %s", (change["sender"],))
                        else:
                            conn.execute("INSERT INTO copy SELECT * FROM jsonb_populate_record("
                                         "NULL::copy, %s)", (json.dumps(change),))
                    if rows:
                        conn.execute("SELECT argus.acknowledge('per_sender', 'sql', %s)",
                                     (rows[-1][0],))
                    if attempt == "crash":
                        raise RuntimeError("killed before committing")
            except RuntimeError:
                pass
        assert bag(conn.execute("SELECT * FROM copy")) == bag(db.results("per_sender"))


def test_each_committed_cycle_notifies_listeners(subscribed, login):
    oracle, rng = subscribed
    db = oracle.db
    with psycopg.connect(db.dsn, autocommit=True) as listener:
        listener.execute("LISTEN argus_cycle")
        load(oracle, rng, 100)
        report = oracle.run()
        oracle.run()  # nothing new: no query changed
        payloads = [json.loads(n.payload) for n in listener.notifies(timeout=2, stop_after=2)]
    assert payloads[0]["run"] == report.run_id
    assert payloads[0]["queries"] == sorted(QUERIES) and not payloads[0]["truncated"]
    assert payloads[1] == {"run": report.run_id + 1, "queries": [], "truncated": False}
    # once a role may read some queries only, the payload names none; the role asks
    role, dsn = login("sub")
    db.grant("reader", role, query="top2")
    with psycopg.connect(dsn, autocommit=True) as reader:
        reader.execute("LISTEN argus_cycle")
        load(oracle, rng, 200)
        report = oracle.run()
        (note,) = list(reader.notifies(timeout=2, stop_after=1))
        assert json.loads(note.payload) == {"run": report.run_id}
        named = [q for (q,) in reader.execute("SELECT argus.changed_queries(%s)",
                                              (report.run_id,))]
        assert named == ["top2"]
        with pytest.raises(psycopg.errors.UndefinedObject, match="no query named 'big'"):
            reader.execute("SELECT * FROM argus.subscribe('big')")
        assert reader.execute("SELECT * FROM argus.subscribe('top2')").fetchone()[0] \
            == report.run_id


def test_a_consumer_is_moved_or_forgotten_only_by_its_role(subscribed, login):
    """A reader of a query moved another application's consumer of it to the end of the
    log, or deleted it (found by a helper): a named consumer is now the role's that
    made it; only that role and argus's owner acknowledge or forget it, and another
    role may not take its name."""
    oracle, rng = subscribed
    db = oracle.db
    db.conn.execute("SELECT * FROM argus.subscribe('top2', 'billing')")
    role, dsn = login("consumer")
    db.grant("reader", role, query="top2")
    load(oracle, rng, 100)
    oracle.run()
    theirs = "consumer 'billing' of query 'top2' is role .*: role .* may not move or forget it"
    with psycopg.connect(dsn, autocommit=True) as other:
        for statement in ("SELECT argus.acknowledge('top2', 'billing', 9223372036854775807)",
                          "SELECT argus.unsubscribe('top2', 'billing')",
                          "SELECT * FROM argus.subscribe('top2', 'billing')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match=theirs):
                other.execute(statement)
        (position, new) = other.execute(
            "SELECT * FROM argus.subscribe('top2', 'mine')").fetchone()
        assert new
        other.execute("SELECT argus.acknowledge('top2', 'mine', %s)", (position,))
        other.execute("SELECT argus.unsubscribe('top2', 'mine')")
    assert db.conn.execute("SELECT consumer, position FROM argus_catalog.consumers"
                           ).fetchall() == [("billing", None)]
    db.conn.execute("SELECT argus.unsubscribe('top2', 'billing')")  # (the owner may)


def test_a_log_that_no_longer_keeps_changes_says_so(subscribed):
    oracle, rng = subscribed
    db = oracle.db
    first = next(db.subscribe("per_sender", consumer="slow", timeout=0.1)).position
    for cycle in range(1, 4):
        load(oracle, rng, cycle * 100)
        oracle.run()
    logged = db.conn.execute("SELECT count(DISTINCT argus_position) FROM argus_log.per_sender")
    assert logged.fetchone()[0] == 3  # slow acknowledged nothing past its snapshot
    db.acknowledge("per_sender", "slow", first + 2)
    load(oracle, rng, 500)
    trimmed(oracle)  # cut below what every consumer has
    assert db.conn.execute("SELECT min(argus_position) FROM argus_log.per_sender"
                           ).fetchone()[0] == first + 3
    with pytest.raises(ChangesLostError, match=f"after position {first} are no longer kept"):
        next(db.subscribe("per_sender", since=first, timeout=0.1))
    db.configure(keep_changes="0 seconds")  # then what is older goes, acknowledged or not
    load(oracle, rng, 600)
    trimmed(oracle)
    with pytest.raises(ChangesLostError, match="keep_changes"):
        next(db.subscribe("per_sender", consumer="slow", timeout=0.1))
    with pytest.raises(UnknownQueryError, match="no query named 'nope'"):
        next(db.subscribe("nope"))
    db.unregister_query("per_sender")
    assert db.conn.execute("SELECT to_regclass('argus_log.per_sender')").fetchone()[0] is None
    assert db.conn.execute("SELECT count(*) FROM argus_catalog.change_logs").fetchone()[0] == 0


def trimmed(oracle) -> None:
    """Cycles up to the next that cuts the logs (every 16th: argus.log_changes)."""
    while oracle.run().run_id % 16:
        pass


def test_the_cli_streams_an_answer_and_its_changes(subscribed):
    oracle, rng = subscribed
    db = oracle.db
    result = CliRunner().invoke(main, ["subscribe", "big", "--timeout", "0.5", "--dsn", db.dsn],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert {line["row"]["receiver"] for line in lines} == {r for (r,) in db.results("big")}
    assert {(line["position"], line["sign"]) for line in lines} \
        == {(db.conn.execute("SELECT argus.position()").fetchone()[0], 1)}
    # no log for a query no one subscribed to
    assert db.conn.execute("SELECT count(*) FROM argus_catalog.change_logs").fetchone()[0] == 1


def test_psql_alone_with_run_follow(db):
    """Everything from SQL: a stream and a query registered by functions (requests that
    `argus run --follow` carries out as they come, in the stream's declared column
    order), rows inserted into the inbox, each cycle run as soon as they commit, and the
    changes read from the log; a cycle run from SQL says when requests wait."""
    conn = db.conn
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("""SELECT argus.create_stream('t', '{"v": "int", "id": "bigint"}')""")
    conn.execute("SELECT argus.run_cycle()")
    assert any("wait for an argus process" in n for n in notices)
    follow = subprocess.Popen([sys.executable, "-m", "argus", "run", "--follow", "--dsn", db.dsn],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        (request,) = conn.execute(
            "SELECT argus.register('pos', 'SELECT id, v FROM t WHERE v > 0')").fetchone()
        for _ in range(200):
            status = conn.execute("SELECT status, error FROM argus_catalog.requests "
                                  "WHERE request_id = %s", (request,)).fetchone()
            if status[0] != "pending":
                break
            time.sleep(0.05)
        assert status == ("done", None)
        assert [c for c, _ in db.query("pos").columns] == ["id", "v"]
        position, _ = conn.execute("SELECT * FROM argus.subscribe('pos')").fetchone()
        conn.execute("INSERT INTO argus_inbox.t VALUES (5, 1), (-5, 2)")  # (v, id)
        for _ in range(200):
            rows = conn.execute("SELECT * FROM argus.changes_since('pos', %s)",
                                (position,)).fetchall()
            if rows:
                break
            time.sleep(0.05)
        assert [(sign, change) for _, sign, change in rows] == [(1, {"id": 1, "v": 5})]
    finally:
        follow.terminate()
        out, err = follow.communicate(timeout=30)
    assert follow.returncode == 0, err
    assert "following" in out and "stopped" in err


def test_run_exits_3_when_a_query_was_isolated(db):
    db.create_stream("t", {"id": "bigint", "v": "int"})
    db.register_query("ratio", "SELECT id, 10 / v AS r FROM t")
    db.register_query("fine", "SELECT id FROM t")
    db.insert("t", [(1, 2)])
    assert CliRunner().invoke(main, ["run", "--dsn", db.dsn]).exit_code == 0
    db.insert("t", [(2, 0)])
    result = CliRunner().invoke(main, ["run", "--dsn", db.dsn])
    assert result.exit_code == 3 and "isolated" in result.output
    assert sorted(db.results("fine")) == [(1,), (2,)]


def test_a_consumer_follows_a_query_across_its_migrations(subscribed):
    """Migrations move a query to other nodes between two cycles (re-run, then
    incremental again): its log goes on, and the consumer's copy stays its answer."""
    oracle, rng = subscribed
    db = oracle.db
    copy: Counter = Counter()
    followed = db.subscribe("per_sender", consumer="m", timeout=0.2)
    steps = ["rerun", None, "incremental", None, None]
    for cycle, evaluate in enumerate(steps, 1):
        if evaluate is not None:
            (decision,) = db.migrate(["per_sender"], evaluate=evaluate)
            assert decision.migrated, decision.why
        for changes in followed:
            apply(copy, changes.rows)
        assert copy == bag(db.results("per_sender")), f"after cycle {cycle}"
        load(oracle, rng, cycle * 100)
        oracle.run()
        followed = db.subscribe("per_sender", consumer="m", timeout=0.2)
    for changes in followed:
        apply(copy, changes.rows)
    assert copy == bag(db.results("per_sender"))


def test_a_consumer_of_a_query_that_fails_is_told(db):
    """A query isolated after a failure logs nothing more: its consumer, in Python or
    SQL, gets what was logged before, then an error naming the failure, not
    silence."""
    from argus.errors import QueryFailedError

    db.create_stream("t", {"id": "bigint", "v": "int"})
    db.register_query("ratio", "SELECT id, 10 / v AS r FROM t")
    db.insert("t", [(1, 2)])
    db.run()
    changes = db.subscribe("ratio", consumer="app", timeout=5)
    assert next(changes).rows == [(1, 5, 1)]  # (the answer, as a snapshot)
    position = db.conn.execute("SELECT argus.position()").fetchone()[0]
    db.insert("t", [(2, 5)])
    db.run()
    assert next(changes).rows == [(2, 2, 1)]
    db.insert("t", [(3, 0)])
    assert db.run().failed.keys() == {"ratio"}
    with pytest.raises(QueryFailedError, match="division by zero"):
        next(changes)
    rows = db.conn.execute("SELECT log_position, change FROM argus.changes_since('ratio', %s)",
                           (position,)).fetchall()
    assert [r[1] for r in rows] == [{"id": 2, "r": 2}]  # (what was logged is still read)
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="isolated"):
        db.conn.execute("SELECT * FROM argus.changes_since('ratio', %s)", (rows[-1][0],))


def test_a_retried_query_s_consumers_start_again_from_its_answer(oracle):
    """A retried query's answer is rebuilt with the rows it missed while isolated, which
    no log holds: its consumer behind is told to start again (ChangesLostError), one
    that does gets the rebuilt answer, and the cycles after it log every change; its
    changes view shows none until the next cycle (it read the missed retraction of the
    failing row: a helper's finding, as the rebuilt rows never logged)."""
    oracle.create_table("t", {"id": "int", "v": "int"}, "id")
    oracle.register("q", "SELECT id, 10 / v AS x FROM t")
    db = oracle.db
    oracle.insert("t", [(1, 1)])
    oracle.run()
    changes = db.subscribe("q", consumer="app", timeout=5)
    assert next(changes).rows == [(1, 10, 1)]
    oracle.insert("t", [(2, 0)])
    assert oracle.run().failed.keys() == {"q"}
    oracle.update("t", [(2, 5)])
    oracle.run()
    oracle.retry("q")  # (rebuilt, and checked)
    assert db.new_results("q") == []
    with pytest.raises(ChangesLostError, match="retried"):
        next(changes)
    again = db.subscribe("q", consumer="app2", timeout=5)
    held = Counter()
    apply(held, next(again).rows)
    oracle.insert("t", [(3, 2)])
    oracle.run()  # (the oracle: the answer and its changes)
    apply(held, next(again).rows)
    assert held == bag(db.results("q"))
