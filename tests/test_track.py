"""Change capture (argus.track): an ordinary table that the application writes with
plain SQL is followed by an argus table. After every cycle each query's answer equals
the query run from scratch over the application's table itself (the oracle's search
path reaches public.orders, which has no mirror)."""

from __future__ import annotations

import random
import re
from datetime import datetime
from decimal import Decimal

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import make_conninfo

import argus
from argus import roles
from argus.cli import main
from argus.errors import (ArgusError, CycleError, DuplicateNameError, InvalidNameError,
                          LoadError, QueryError, UnknownStreamError)

QUERIES = {
    "per_customer": "SELECT customer, count(*) AS n, sum(amount) AS total, min(amount) AS lo, "
                    "max(amount) AS hi FROM orders GROUP BY customer",
    "big": "SELECT id, amount FROM orders WHERE amount > 50",
    "customers": "SELECT DISTINCT customer FROM orders",
    "shipped": "SELECT o.id, s.carrier FROM orders o JOIN shipments s ON s.order_id = o.id",
    "top": "SELECT id, amount FROM orders ORDER BY amount DESC, id LIMIT 3",
    "lonely": "SELECT id FROM orders EXCEPT SELECT order_id FROM shipments",
}


def _orders(oracle):
    oracle.conn.execute("CREATE TABLE public.orders (id int PRIMARY KEY, customer text NOT NULL, "
                        "amount numeric(10,2))")
    oracle.conn.execute("INSERT INTO public.orders SELECT g, 'c' || g % 4, g * 3 "
                        "FROM generate_series(1, 20) g")
    oracle.conn.execute("CREATE SEQUENCE public.fresh_ids START 100000")
    return oracle


@pytest.fixture
def orders(oracle):
    return _orders(oracle)


@pytest.fixture(params=["trigger", "slot"])
def captured(request):
    """(oracle over public.orders, capture method); a slot's on a wal_level = logical
    server. The slot needs the whole old row: customer is text (TOASTable)."""
    oracle = _orders(request.getfixturevalue(
        "oracle" if request.param == "trigger" else "logical_oracle"))
    if request.param == "slot":
        oracle.conn.execute("ALTER TABLE public.orders REPLICA IDENTITY FULL")
    return oracle, request.param


def test_a_tracked_table_follows_every_kind_of_statement(captured):
    """Multi-row inserts, updates (of the key too, of several rows at once), no-op updates,
    deletes, upserts, COPY, TRUNCATE, rolled-back transactions and savepoints, several
    statements on one key between cycles: after each cycle the answers equal the
    queries over public.orders, with either capture."""
    oracle, method = captured
    conn = oracle.conn
    schema = oracle.db.track("public.orders", method=method)
    assert schema.primary_key == ("id",) and "customer" in schema.not_null
    oracle.create_stream("shipments", {"order_id": "int", "carrier": "text"})
    oracle.run()  # the rows copied at `track` wait in the inbox until a cycle
    for name, query in list(QUERIES.items())[:3]:
        oracle.register(name, query)
    rng = random.Random(5)
    statements = [
        "INSERT INTO orders SELECT nextval('fresh_ids'), 'c' || g % 5, g * 7 "
        "FROM generate_series(1, 3) g",
        "UPDATE orders SET amount = amount + 11 WHERE id % 3 = {k} % 3",
        "UPDATE orders SET customer = 'c9' WHERE id = (SELECT min(id) FROM orders)",
        "UPDATE orders SET id = nextval('fresh_ids') WHERE id = (SELECT min(id) FROM orders)",
        "UPDATE orders SET id = nextval('fresh_ids'), amount = amount + 1 WHERE id < {k}",
        "UPDATE orders SET amount = amount",
        "DELETE FROM orders WHERE id % 7 = {k} % 7",
        "INSERT INTO orders VALUES ({k}, 'c1', 1), ({k} + 1, 'c2', NULL) "
        "ON CONFLICT (id) DO UPDATE SET amount = excluded.amount",
        "UPDATE orders SET amount = NULL WHERE id = (SELECT min(id) FROM orders)",
    ]
    for cycle in range(14):
        if cycle == 5:
            for name, query in list(QUERIES.items())[3:]:
                oracle.register(name, query)
        for _ in range(rng.randint(1, 4)):
            statement = rng.choice(statements).format(k=rng.randint(1, 60))
            conn.execute(statement)  # test-authored SQL
        if cycle % 4 == 1:  # changes that never happened
            with pytest.raises(ZeroDivisionError):
                with conn.transaction():
                    conn.execute("DELETE FROM orders")
                    raise ZeroDivisionError
            with conn.transaction():
                conn.execute("UPDATE orders SET amount = 0")
                with pytest.raises(psycopg.errors.UniqueViolation):
                    with conn.transaction():  # a savepoint
                        conn.execute("UPDATE orders SET amount = -1 WHERE id < 5")
                        conn.execute("INSERT INTO orders SELECT id, customer, 1 FROM orders "
                                     "LIMIT 1")
        if cycle == 9:
            with conn.cursor() as cur, cur.copy("COPY orders FROM STDIN") as copy:
                for i in range(5):
                    copy.write_row((5000 + i, "c7", i))
        if cycle == 11:
            conn.execute("TRUNCATE orders")
            conn.execute("INSERT INTO orders VALUES (1, 'c1', 5), (2, 'c1', 6)")
        ids = [r[0] for r in conn.execute("SELECT id FROM orders")]
        oracle.insert("shipments", [(rng.choice(ids or [0]), rng.choice(["ups", "dhl"]))])
        oracle.run()
    assert oracle.cycles_checked == 15  # (and the one after `track`)
    assert conn.execute("SELECT count(*) FROM argus_streams.orders").fetchone() == \
        conn.execute("SELECT count(*) FROM public.orders").fetchone()


def test_a_join_on_a_tracked_tables_key_probes_its_primary_key(orders):
    """The history of a tracked table has its primary key: a join on the key's leading
    column probes it rather than adding a second index that every change would pay
    for; unregistering the query leaves the key."""
    orders.db.track("public.orders")
    orders.create_stream("shipments", {"order_id": "int", "carrier": "text"})
    orders.insert("shipments", [(1, "ups"), (2, "dhl"), (50, "ups")])
    orders.run()
    orders.register("shipped", QUERIES["shipped"])

    def indexes():
        return [r[0] for r in orders.conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'argus_streams' "
            "AND tablename = 'orders' ORDER BY 1")]

    assert indexes() == ["orders_pkey"]
    orders.conn.execute("UPDATE public.orders SET id = id + 1000 WHERE id = 2")
    orders.run()
    orders.check()
    orders.unregister("shipped")
    assert indexes() == ["orders_pkey"]


def test_a_tracked_table_changes_only_through_its_source(orders):
    db = orders.db
    db.track("public.orders", "o")
    assert db.tracked() == {"o": "public.orders"}
    for load in (lambda: db.insert("o", [(99, "c1", 1)]), lambda: db.update("o", [(1, "c", 1)]),
                 lambda: db.delete("o", [1])):
        with pytest.raises(LoadError, match=r"^table 'o' follows public\.orders \(argus track\): "
                                            r"change public\.orders instead"):
            load()
    with pytest.raises(ArgusError, match=r"public\.orders is already tracked by table o"):
        db.track("orders", "again")
    assert db.untrack("o") == "public.orders"
    assert db.tracked() == {}
    orders.conn.execute("UPDATE orders SET amount = 0")  # no trigger left
    triggers = orders.conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = "
                                   "'public.orders'::regclass").fetchone()[0]
    assert triggers == 0
    db.insert("o", [(99, "c1", 1)])  # an argus table like any other now
    with pytest.raises(UnknownStreamError, match="'o' tracks no table"):
        db.untrack("o")


def test_what_cannot_be_tracked_is_refused_naming_the_fix(db):
    conn = db.conn
    conn.execute("CREATE TABLE nokey (a int, b text)")
    conn.execute("CREATE TABLE deferred (a int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED)")
    conn.execute('CREATE TABLE "Mixed" ("Id" int PRIMARY KEY)')
    conn.execute("CREATE TABLE identity (a int NOT NULL, b int)")
    conn.execute("CREATE UNIQUE INDEX identity_a ON identity (a)")
    conn.execute("ALTER TABLE identity REPLICA IDENTITY USING INDEX identity_a")
    conn.execute("CREATE VIEW a_view AS SELECT 1 AS a")
    conn.execute("CREATE TABLE parted (a int PRIMARY KEY) PARTITION BY RANGE (a)")
    conn.execute("CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10)")
    conn.execute('CREATE TABLE collated (a text COLLATE "C" PRIMARY KEY)')
    conn.execute('CREATE TABLE reserved (a int PRIMARY KEY, "user" text)')
    conn.execute("CREATE TABLE taken (a int PRIMARY KEY)")
    db.create_stream("taken", {"x": "int"})
    cases = [
        ("nokey", InvalidNameError, r"public\.nokey has no primary key, which argus needs to "
                                    r"follow its updates and deletes: add one \(ALTER TABLE "
                                    r"public\.nokey ADD PRIMARY KEY"),
        ("deferred", InvalidNameError, "DEFERRABLE"),
        ('public."Mixed"', InvalidNameError, "column 'Id' is not a plain lower-case name"),
        ("a_view", InvalidNameError, r"public\.a_view is not a table"),
        ("nowhere.t", UnknownStreamError, r"no table 'nowhere\.t' to track"),
        ("argus_catalog.streams", InvalidNameError, "argus's own table"),
        ("parted", InvalidNameError, r"public\.parted is partitioned: a statement on a partition"),
        ("parted_1", InvalidNameError, "is a partition or an inheritance child"),
        ("collated", InvalidNameError, r"public\.collated: column 'a' has the collation 'C'"),
        ("reserved", InvalidNameError, r"public\.reserved: invalid column name 'user': a reserved"),
        ("taken", DuplicateNameError, r"argus has a stream or table 'taken' already: track "
                                      r"public\.taken under another name \(--as NAME\)"),
    ]
    for source, error, message in cases:
        with pytest.raises(error, match=message):
            db.track(source)
    assert [s.name for s in db.streams()] == ["taken"] and db.tracked() == {}
    assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'argus_track%'"
                        ).fetchone()[0] == 0
    assert db.track("identity").primary_key == ("a",)  # its replica identity's index
    conn.execute("CREATE TABLE included (a int, b int, PRIMARY KEY (a) INCLUDE (b))")
    assert db.track("included").primary_key == ("a",)  # not the INCLUDE column


def test_a_writer_without_argus_rights_still_writes_its_table(orders, login):
    """The capture runs with argus's owner's rights: the application's role needs only
    its own table."""
    db = orders.db
    db.track("public.orders")
    db.register_query("per_customer", QUERIES["per_customer"])
    role, dsn = login("app")
    orders.conn.execute(sql.SQL("GRANT INSERT, UPDATE, DELETE, SELECT ON public.orders TO {}")
                        .format(sql.Identifier(role)))
    with psycopg.connect(dsn, autocommit=True) as app:
        app.execute("INSERT INTO orders VALUES (100, 'c1', 1)")
        app.execute("UPDATE orders SET amount = 2 WHERE id = 1")
        app.execute("DELETE FROM orders WHERE id = 2")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("INSERT INTO argus_inbox.orders (id, customer, argus_op) "
                        "VALUES (7, 'x', 'i')")
    orders.run()


def test_track_from_the_command_line(orders, fresh_dsn):
    runner = CliRunner()
    done = runner.invoke(main, ["track", "public.orders", "--as", "o", "--dsn", fresh_dsn])
    assert done.exit_code == 0, done.output
    assert "table o follows public.orders (key: id)" in done.output
    listed = runner.invoke(main, ["stream", "list", "--dsn", fresh_dsn])
    assert "follows public.orders" in listed.output
    refused = runner.invoke(main, ["track", "public.nothing", "--dsn", fresh_dsn])
    assert refused.exit_code != 0 and "no table 'public.nothing' to track" in refused.output
    done = runner.invoke(main, ["untrack", "o", "--dsn", fresh_dsn])
    assert done.exit_code == 0 and "no longer follows public.orders" in done.output


def test_dropping_a_tracked_table_removes_its_triggers(orders):
    db = orders.db
    db.track("public.orders")
    db.drop_stream("orders")
    orders.conn.execute("INSERT INTO orders VALUES (500, 'c1', 1)")
    assert orders.conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = "
                               "'public.orders'::regclass").fetchone()[0] == 0


def test_a_dropped_source_leaves_a_table_that_can_be_untracked_and_dropped(orders):
    """(Once, format('%I.%I', NULL, NULL) failed every catalog read of the streams.)"""
    db = orders.db
    db.track("public.orders")
    db.run()
    orders.conn.execute("DROP TABLE public.orders")
    (source,) = db.tracked().values()
    assert source.startswith("(a dropped table, oid ")
    db.create_stream("other", {"x": "int"})  # the catalog still reads
    assert db.untrack("orders") == source
    db.drop_stream("orders")
    assert [s.name for s in db.streams()] == ["other"]


def test_changes_made_as_a_replica_are_captured(orders):
    """pg_restore --disable-triggers aside, a session replaying changes
    (session_replication_role = replica) still fires the capture: ENABLE ALWAYS."""
    oracle, conn = orders, orders.conn
    oracle.db.track("public.orders")
    oracle.run()
    oracle.register("per_customer", QUERIES["per_customer"])
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("INSERT INTO orders VALUES (100, 'c1', 1)")
        conn.execute("DELETE FROM orders WHERE id = 1")
    oracle.run()


# -- capture by a replication slot -----------------------------------------------------

def test_a_cycle_that_fails_reads_the_slot_again_and_one_that_commits_never(logical_oracle):
    """A slot's position moves outside transactions: a cycle reads up to a position it
    records, and only the next cycle moves the slot there. Reads rolled back leave the
    changes to the next cycle; reads committed (untrack's, a cycle's) are not read twice,
    even while the slot has not moved yet."""
    oracle = _orders(logical_oracle)
    conn, db = oracle.conn, oracle.db
    conn.execute("ALTER TABLE orders REPLICA IDENTITY FULL")
    db.track("public.orders", method="slot")
    oracle.run()
    oracle.register("per_customer", QUERIES["per_customer"])
    oracle.register("big", QUERIES["big"])
    for attempt in range(3):
        conn.execute("UPDATE orders SET amount = amount + 1 WHERE id %% 3 = %s", (attempt,))
        conn.execute("DELETE FROM orders WHERE id = %s", (attempt + 1,))
        with pytest.raises(ZeroDivisionError), conn.transaction():
            conn.execute("SELECT argus.read_capture()")  # into the inbox, then rolled back
            assert conn.execute("SELECT count(*) FROM argus_inbox.orders").fetchone()[0] > 0
            raise ZeroDivisionError
        assert conn.execute("SELECT count(*) FROM argus_inbox.orders").fetchone()[0] == 0
        oracle.run()
        slot, applied = conn.execute(
            "SELECT s.confirmed_flush_lsn, c.applied FROM argus_catalog.capture_slot c "
            "JOIN pg_replication_slots s ON s.slot_name = c.slot").fetchone()
        assert slot < applied  # not moved until the next cycle
        oracle.run()  # nothing new: nothing read twice
    conn.execute("INSERT INTO orders VALUES (900, 'c1', 90)")
    conn.execute("SELECT argus.read_capture()")  # committed, as untrack does
    oracle.run()
    assert oracle.cycles_checked == 8


def test_slot_capture_of_several_tables_in_one_transaction(logical_oracle):
    """Two tables, written by the same transactions, one truncated between writes; an
    update that leaves a TOASTed value alone (the old row of REPLICA IDENTITY FULL has
    it); a table added to the slot later; untrack reads what waits, and the last one
    drops the slot."""
    oracle = _orders(logical_oracle)
    conn, db = oracle.conn, oracle.db
    conn.execute("CREATE TABLE notes (id int PRIMARY KEY, body text, tags int[], doc jsonb)")
    conn.execute("ALTER TABLE orders REPLICA IDENTITY FULL")
    conn.execute("ALTER TABLE notes REPLICA IDENTITY FULL")
    long_body = "SELECT string_agg(md5(g::text || %s), '') FROM generate_series(1, 400) g"
    conn.execute(f"INSERT INTO notes VALUES (1, ({long_body}), '{{1,2}}', '{{\"a\": 1}}')",
                 ("x",))
    db.track("public.orders", method="slot")
    # the slot's reader runs with the tracking role's rights (REPLICATION): argus's owner
    # role alone may call it, and it names nothing outside pg_catalog
    acl, config = conn.execute("SELECT proacl::text[], proconfig FROM pg_proc WHERE oid = "
                               "'argus_inbox.\"capture slot\"'::regproc").fetchone()
    assert not any(a.startswith("=") for a in acl) and len(acl) == 2
    assert config[0] == "search_path=pg_catalog, pg_temp"
    oracle.run()
    oracle.register("per_customer", QUERIES["per_customer"])
    db.track("public.notes", method="slot")
    oracle.run()
    oracle.register("notes", "SELECT id, md5(body) AS body, tags, doc FROM notes")
    oracle.register("noted", "SELECT n.id, o.customer FROM notes n JOIN orders o ON o.id = n.id")
    for step in range(4):
        with conn.transaction():
            conn.execute("INSERT INTO notes VALUES (%s, 'short', '{3}', '[1, \"b\"]')",
                         (10 + step,))
            conn.execute("UPDATE notes SET tags = tags || %s WHERE id = 1", (step,))
            conn.execute("UPDATE orders SET amount = amount * 2 WHERE id = %s", (step + 1,))
            if step == 2:
                conn.execute("TRUNCATE orders")
                conn.execute("INSERT INTO orders VALUES (1, 'c1', 1), (11, 'c2', 2)")
            conn.execute("UPDATE orders SET customer = 'c9' WHERE id = 11")
        oracle.run()
    conn.execute("ALTER TABLE notes REPLICA IDENTITY DEFAULT")  # the old row is no more
    conn.execute("UPDATE notes SET tags = '{}' WHERE id = 1")
    conn.execute("UPDATE orders SET amount = 0 WHERE id = 1")
    report = oracle.run()  # the table stops, its queries isolated; the other goes on
    for name in ("notes", "noted"):
        assert re.search(r"table notes stopped following its source: the capture slot does "
                         r"not have the value of its source's column body", report.failed[name])
    conn.execute("UPDATE notes SET tags = '{7}' WHERE id = 1")
    conn.execute("UPDATE orders SET amount = 5 WHERE id = 1")
    assert oracle.run().failed == {}  # (the stopped table's changes read past)
    assert db.untrack("notes") == "public.notes"  # without its changes that cannot be read
    oracle.unregister("notes")
    oracle.unregister("noted")
    db.drop_stream("notes")
    oracle.run()  # the other table's changes
    conn.execute("INSERT INTO orders VALUES (70, 'c3', 7)")
    assert db.untrack("orders") == "public.orders"  # reads what waits first
    assert conn.execute("SELECT count(*) FROM argus_inbox.orders").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM pg_replication_slots WHERE database = "
                        "current_database()").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pg_publication").fetchone()[0] == 0


def test_what_a_slot_cannot_follow_is_refused_naming_the_fix(logical_oracle, db):
    conn = logical_oracle.conn
    conn.execute("CREATE TABLE plain (a int PRIMARY KEY, b text)")
    conn.execute("CREATE TABLE narrow (a int PRIMARY KEY, b int NOT NULL)")
    conn.execute("CREATE UNIQUE INDEX narrow_b ON narrow (b)")
    conn.execute("ALTER TABLE narrow REPLICA IDENTITY USING INDEX narrow_b")
    with pytest.raises(InvalidNameError, match=r"public\.plain: capture by a replication slot "
                       r"needs the whole old row of each update, as it has columns whose values "
                       r"may be kept out of line \(TOAST\).*REPLICA IDENTITY FULL"):
        logical_oracle.db.track("plain", method="slot")
    with pytest.raises(InvalidNameError, match=r"its replica identity is not its key \(a\)"):
        logical_oracle.db.track("narrow", method="slot")
    conn.execute("CREATE TABLE derived (a int PRIMARY KEY, b int, c int GENERATED ALWAYS "
                 "AS (b * 2) STORED)")  # (pgoutput sends no generated column: every cycle
    with pytest.raises(InvalidNameError,  # failed naming it as dropped; a helper)
                       match=r"public\.derived: column 'c' is generated.*--method trigger"):
        logical_oracle.db.track("derived", method="slot")
    with pytest.raises(ArgusError, match="no capture method 'wal'"):
        logical_oracle.db.track("plain", method="wal")
    assert conn.execute("SELECT count(*) FROM pg_replication_slots WHERE database = "
                        "current_database()").fetchone()[0] == 0
    conn.execute("ALTER TABLE narrow REPLICA IDENTITY DEFAULT")  # its key: the primary key
    logical_oracle.db.track("narrow", method="slot")
    if db.conn.execute("SHOW wal_level").fetchone()[0] != "logical":
        db.conn.execute("CREATE TABLE elsewhere (a int PRIMARY KEY)")
        with pytest.raises(ArgusError, match=r"needs wal_level = logical \(this server has "
                                             r"replica\): ALTER SYSTEM SET wal_level"):
            db.track("elsewhere", method="slot")


def test_a_key_update_without_the_whole_old_row_is_refused_not_nulled(logical_oracle):
    """REPLICA IDENTITY FULL taken away after track: an update of the key sends the old
    key alone ('K'), and the new row's TOASTed values left unchanged were taken from it
    as NULL, the answer wrong and no error (a helper). The table stops following its
    source, its query isolated naming the column, and nothing of the update applied."""
    conn = logical_oracle.conn
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text)")
    conn.execute("ALTER TABLE docs REPLICA IDENTITY FULL")
    conn.execute("INSERT INTO docs SELECT 1, string_agg(md5(g::text), '') "
                 "FROM generate_series(1, 400) g")  # (12,800 characters: TOASTed)
    logical_oracle.db.track("docs", method="slot")
    logical_oracle.run()  # (the rows copied at track wait in the inbox until a cycle)
    logical_oracle.register("sizes", "SELECT id, length(body) AS n FROM docs")
    conn.execute("ALTER TABLE docs REPLICA IDENTITY DEFAULT")
    conn.execute("UPDATE docs SET id = 2")
    report = logical_oracle.db.run()
    assert "does not have the value of its source's column body" in report.failed["sizes"]
    assert logical_oracle.conn.execute("SELECT id, length(body) FROM argus_streams.docs"
                                       ).fetchall() == [(1, 12800)]  # (nothing applied)


def _slot_orders(logical_oracle):
    oracle = _orders(logical_oracle)
    oracle.conn.execute("ALTER TABLE orders REPLICA IDENTITY FULL")
    oracle.db.track("public.orders", method="slot")
    oracle.run()
    oracle.register("per_customer", QUERIES["per_customer"])
    return oracle


def test_an_asynchronous_commit_waits_for_the_next_cycle(logical_oracle):
    """A slot decodes WAL that is flushed; a commit with synchronous_commit = off is
    written first. (Once the cycle recorded the written position and the next one moved
    the slot past the commit: lost.) The table, after two cycles, is its source."""
    oracle = _slot_orders(logical_oracle)
    conn = oracle.conn
    conn.execute("CREATE TABLE public.filler (a int, b text)")
    conn.execute("SET synchronous_commit = off")
    conn.execute("INSERT INTO orders VALUES (500, 'c1', 5)")
    # more WAL than its buffers hold: written past the commit, not flushed
    conn.execute("INSERT INTO filler SELECT g, repeat('x', 100) FROM generate_series(1, 60000) g")
    conn.execute("RESET synchronous_commit")
    # a read as untrack makes (a cycle's may flush first): the commit is not read
    conn.execute("SELECT argus.read_capture()")
    conn.execute("CHECKPOINT")  # flushes it
    oracle.db.run()
    assert conn.execute("SELECT count(*) FROM ((TABLE public.orders EXCEPT TABLE "
                        "argus_streams.orders) UNION ALL (TABLE argus_streams.orders EXCEPT "
                        "TABLE public.orders)) AS d").fetchone()[0] == 0


def test_a_changed_source_stops_its_table_not_silently_and_not_the_others(
        logical_oracle):
    """A column renamed, retyped or widened after `track` would be read as NULL, fail
    its cast, or be cut to the old width: the table stops following its source, its
    queries isolated naming the table and the fix, and the other queries go on in the
    same cycle and the next (every cycle failed, every table's, until it was untracked:
    a helper's round); untrack, then track again."""
    oracle = _slot_orders(logical_oracle)
    conn, db = oracle.conn, oracle.db
    oracle.create_stream("events", {"x": "int"})
    oracle.register("events", "SELECT count(*) AS n FROM events")
    for change, customer, message in [
            ("ALTER TABLE orders RENAME COLUMN amount TO total", "a long customer name",
             "its source's column amount was dropped"),
            ("ALTER TABLE orders ALTER COLUMN customer TYPE varchar(50)", "x",
             "its source's column customer"),
            ("ALTER TABLE orders ALTER COLUMN id TYPE bigint", "x", "its source's column id"),
            ("ALTER TABLE orders ALTER COLUMN customer DROP NOT NULL", None,
             "its changes cannot be applied: .*customer is not null")]:
        with conn.transaction():
            conn.execute("SAVEPOINT before")
            conn.execute(change)  # test-authored DDL
            conn.execute("INSERT INTO orders VALUES (700, %s, 1)", (customer,))
        oracle.insert("events", [(1,)])
        report = oracle.run()
        assert re.search(rf"table orders stopped following its source: {message}.*untrack it",
                         report.failed["per_customer"]), report.failed
        conn.execute("INSERT INTO orders VALUES (701, NULL, 2)" if customer is None else
                     "INSERT INTO orders VALUES (701, 'another', 2)")
        oracle.insert("events", [(1,)])
        assert oracle.run().failed == {}  # (read past)
        with pytest.raises(QueryError, match="stopped following its source"):
            db.retry("per_customer")  # (it came back over the stale copy; a helper)
        with pytest.raises(QueryError, match="stopped following its source"):
            db.register_query("late", "SELECT id FROM orders")  # (so did a new one)
        assert db.untrack("orders") == "public.orders"
        oracle.unregister("per_customer")
        db.drop_stream("orders")
        oracle.run()  # the stream's query goes on
        conn.execute("DROP TABLE orders")
        conn.execute("DROP SEQUENCE fresh_ids")
        _slot_orders(logical_oracle)


def test_a_copied_database_names_its_original_s_slot_and_can_be_untracked(
        logical_oracle, logical_admin_dsn):
    oracle = _slot_orders(logical_oracle)
    original = oracle.conn.info.dbname
    copy = f"{original}_copy"
    oracle.db.close()
    with psycopg.connect(logical_admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(copy), sql.Identifier(original)))
    try:
        with argus.connect(make_conninfo(logical_admin_dsn, dbname=copy)) as db:
            with pytest.raises(CycleError, match=r"the capture slot argus_capture_\d+ is "
                                                 rf"database {original}'s: this database was "
                                                 r"copied from it"):
                db.run()
            assert db.untrack("orders") == "public.orders"
            db.track("public.orders", "orders_again", method="slot")
            db.conn.execute("INSERT INTO orders VALUES (900, 'c1', 9)")
            db.run()
            assert db.conn.execute("SELECT count(*) FROM argus_streams.orders_again "
                                   "WHERE id = 900").fetchone()[0] == 1
    finally:
        roles.drop_database(logical_admin_dsn, copy)
    with psycopg.connect(logical_admin_dsn) as admin:  # the original's slot is untouched
        assert admin.execute("SELECT count(*) FROM pg_replication_slots WHERE database = %s",
                             (original,)).fetchone()[0] == 1


def test_slot_values_round_trip_whatever_the_session_styles(logical_oracle):
    """pgoutput writes values with the session's output functions: a DateStyle that
    writes Dublin's summer time as "IST" (read back as Israel's), or extra_float_digits
    = 0 in the session that untracks, must not change a value."""
    oracle = logical_oracle
    conn, db = oracle.conn, oracle.db
    for setting in ("DateStyle = 'SQL, DMY'", "TimeZone = 'Europe/Dublin'",
                    "extra_float_digits = 0"):  # for the sessions that read the slot
        conn.execute(sql.SQL("ALTER DATABASE {} SET ").format(
            sql.Identifier(conn.info.dbname)) + sql.SQL(setting))
    conn.execute("CREATE TABLE public.readings (id int PRIMARY KEY, at timestamptz, "
                 "x float8, span interval)")
    db.track("public.readings", method="slot")
    oracle.register("readings", "SELECT id, at, x, span FROM readings")
    conn.execute("INSERT INTO readings VALUES (1, '2024-07-01 12:00:00+00', 0.1 + 0.2, "
                 "'1 mon 2 days 03:04:05.5')")
    with argus.connect(make_conninfo(conn.info.dsn, password=conn.info.password)) as styled:
        oracle.run(styled.run)
        conn.execute("UPDATE readings SET x = 1 / 3.0::float8, at = '2024-01-01 12:00+00'")
        styled.untrack("readings")  # reads the changes outside a cycle
    oracle.run()
    assert conn.execute("SELECT x = 1 / 3.0::float8 FROM argus_streams.readings").fetchone()[0]


def test_the_owner_s_code_runs_as_the_owner_even_when_a_superuser_untracks(
        logical_oracle):
    """The SQL a slot's changes are applied with sits in the catalog, and the function
    that applies them is the owner's: argus's owner role's members can change either, so
    a superuser's untrack (which reads what waits) must run them as the owner."""
    oracle = _slot_orders(logical_oracle)
    conn, owner = oracle.conn, roles.owner_role(oracle.conn)
    conn.execute("INSERT INTO orders VALUES (800, 'c1', 8)")
    conn.execute("""UPDATE argus_catalog.tracked SET apply_sql[1] =
                    'CREATE TABLE argus_catalog.who AS SELECT current_user::text AS who'""")
    oracle.db.untrack("orders")
    assert conn.execute("SELECT who FROM argus_catalog.who").fetchall() == [(owner,)]
    oracle.unregister("per_customer")
    oracle.db.drop_stream("orders")
    oracle.db.track("public.orders", method="slot")
    conn.execute("INSERT INTO orders VALUES (801, 'c1', 8)")
    with conn.transaction():  # a member replaces the function, SECURITY INVOKER
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(owner)))
        conn.execute("""CREATE OR REPLACE FUNCTION argus.read_capture(p_run bigint
                        DEFAULT NULL) RETURNS text[] LANGUAGE sql SECURITY INVOKER AS
                        'INSERT INTO argus_catalog.who SELECT current_user;
                         SELECT ARRAY[]::text[]'""")
    oracle.db.untrack("orders")
    assert conn.execute("SELECT who FROM argus_catalog.who").fetchall() == [(owner,)] * 2


def _notices(db) -> list[str]:
    """What argus says to `db`'s session from now on (its warnings), in order."""
    said: list[str] = []
    db.conn.add_notice_handler(lambda diag: said.append(diag.message_primary or ""))
    return said


def _tracked(oracle, table: str, values: str, **queries: str) -> None:
    """public.<table> (`table`: its name and columns) with `values`, tracked, its first
    rows claimed, and `queries` registered over it."""
    oracle.conn.execute(f"CREATE TABLE public.{table}")
    oracle.conn.execute(f"INSERT INTO public.{table.split()[0]} VALUES {values}")
    oracle.db.track(f"public.{table.split()[0]}")
    oracle.run()
    for name, query in queries.items():
        oracle.register(name, query)


def _as_application(oracle, *statements: str) -> None:
    """`statements` from an application's own session, autocommitted."""
    with psycopg.connect(oracle.db.dsn, autocommit=True) as app:
        for statement in statements:
            app.execute(statement)


def test_an_update_that_prints_the_same_in_the_writers_session_is_captured(oracle):
    """Issue 49: with extra_float_digits = 0, 0.3 and 0.30000000000000004 print alike;
    the capture compared rows as text in the writer's session and dropped the update.
    Rows are compared by their bytes now, and a key that only changed its spelling
    (1 -> 1.0) is captured too."""
    _tracked(oracle, "prices (id numeric PRIMARY KEY, f float8)", "(1, 0.3), (2, 1)",
             above="SELECT id, f FROM prices WHERE f > 0.3",
             spelled="SELECT id::text AS k, f FROM prices")
    _as_application(oracle, "SET extra_float_digits = 0",
                    "UPDATE prices SET f = 0.30000000000000004 WHERE id = 1",
                    "UPDATE prices SET id = 2.0 WHERE id = 2")
    oracle.run()
    assert sorted(row[0] for row in oracle.db.results("above")) == [1, 2]
    assert sorted(k for k, _ in oracle.db.results("spelled")) == ["1", "2.0"]
    _as_application(oracle, "DELETE FROM prices")
    oracle.run()
    assert oracle.db.results("spelled") == []


def test_a_tracked_table_with_columns_named_as_the_captures_rows_is_written_to(oracle):
    """Found by a helper: the capture compared the old and new rows as `o *<> n`, so the
    application's own UPDATE of a table with a column n failed ('column reference "n"
    is ambiguous'); its aliases have argus's prefix now, which no column may have."""
    _tracked(oracle, "pairs (k int PRIMARY KEY, n int, o text)", "(1, 1, 'a'), (2, 2, 'b')",
             big="SELECT k, n, o FROM pairs WHERE n > 1")
    _as_application(oracle, "UPDATE pairs SET n = 5 WHERE k = 1",
                    "UPDATE pairs SET o = 'c', k = 3 WHERE k = 2",
                    "UPDATE pairs SET n = n WHERE k = 1")  # (no change: nothing captured)
    oracle.run()
    assert sorted(oracle.db.results("big")) == [(1, 5, "a"), (3, 2, "c")]


def test_an_upgrade_makes_the_capture_of_a_table_tracked_before_again(oracle):
    """A table tracked by an older argus keeps the capture function it made (`o *<> n`)
    until an argus of a newer code version connects, which makes it again."""
    conn = oracle.conn
    _tracked(oracle, "pairs (k int PRIMARY KEY, n int)", "(1, 1)",
             all_pairs="SELECT k, n FROM pairs")
    (old,) = conn.execute("SELECT regexp_replace(pg_get_functiondef("
                          "'argus_inbox.\"track pairs\"'::regproc), "
                          "'\\margus_([on])\\M', '\\1', 'g')").fetchone()
    conn.execute(old)  # the capture as an older argus made it
    conn.execute("UPDATE argus_catalog.program_state SET code_version = 0")
    with pytest.raises(psycopg.errors.AmbiguousColumn):
        conn.execute("UPDATE public.pairs SET n = 2")
    with argus.connect(oracle.db.dsn):
        pass  # (an upgrade, on connect)
    conn.execute("UPDATE public.pairs SET n = 3")
    oracle.run()
    assert oracle.db.results("all_pairs") == [(1, 3)]


def test_a_column_retyped_after_track_refuses_the_tables_writes(orders):
    """The capture function runs as argus's owner: a column retyped to a type whose
    assignment cast to the inbox's type a table's owner wrote had that cast run with
    the owner's rights (found by a helper). A statement on a table whose column changed
    type since `track` is refused, naming it, and runs no cast."""
    oracle = orders
    conn, db = oracle.conn, oracle.db
    db.track("public.orders")
    db.run()
    oracle.register("per_customer", QUERIES["per_customer"])
    conn.execute("CREATE SEQUENCE public.casts")
    conn.execute("CREATE TYPE public.label AS (v text)")
    conn.execute("CREATE FUNCTION public.label_text(public.label) RETURNS text LANGUAGE plpgsql "
                 "AS $$ BEGIN PERFORM nextval('public.casts'); RETURN ($1).v; END $$")
    conn.execute("CREATE CAST (public.label AS text) WITH FUNCTION public.label_text(public.label) "
                 "AS ASSIGNMENT")
    conn.execute("ALTER TABLE public.orders ALTER COLUMN customer TYPE public.label "
                 "USING ROW(customer)::public.label")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState,
                       match="a column of public.orders changed its type"):
        conn.execute("INSERT INTO public.orders VALUES (900, ROW('x'), 1)")
    assert conn.execute("SELECT is_called FROM public.casts").fetchone() == (False,)
    conn.execute("ALTER TABLE public.orders ALTER COLUMN customer TYPE text "
                 "USING (customer).v")  # (back as it was: its writes go on)
    conn.execute("INSERT INTO public.orders VALUES (901, 'y', 2)")
    oracle.run()


def test_a_source_rewritten_in_place_is_said_and_resynced(captured):
    """`ALTER TABLE … TYPE … USING` rewrites a source's rows and no trigger fires, nor
    does a slot decode a change of them: the answers kept the old values, with no word
    (a helper's round). Every cycle now says that the source has a new file, until
    `argus resync` compares its rows with argus's and queues what differs, with the
    changes made before and after the rewrite; a TRUNCATE's new file is no rewrite to the
    triggers (a slot says it)."""
    oracle, method = captured
    conn, db = oracle.conn, oracle.db
    said = _notices(db)
    db.track("public.orders", method=method)
    oracle.run()
    for name in ("per_customer", "big", "top", "customers"):
        oracle.register(name, QUERIES[name])
    conn.execute("UPDATE orders SET amount = amount + 1 WHERE id < 5")  # (before it)
    conn.execute("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(10,2) USING amount * 2")
    conn.execute("DELETE FROM orders WHERE id = 7")  # (after it)
    conn.execute("UPDATE orders SET amount = 1 WHERE id = 8")
    assert db.resync("orders") >= 18  # (the rows doubled; a slot's not yet read too)
    report = oracle.run()
    assert report.new_rows["big"] > 0 and not [m for m in said if "rewritten" in m]
    conn.execute("VACUUM FULL orders")
    oracle.run()
    oracle.run()
    assert len([m for m in said if "was rewritten in place" in m
                and "argus resync orders" in m]) == 2
    assert db.resync("orders") == 0
    conn.execute("TRUNCATE orders")
    conn.execute("INSERT INTO orders VALUES (1, 'c1', 5)")
    said.clear()
    oracle.run()
    # a slot cannot tell a TRUNCATE from a rewrite after it: said as one
    assert bool([m for m in said if "rewritten" in m]) == (method == "slot")
    db.resync("orders")
    conn.execute("TRUNCATE orders")  # then a rewrite (masked with a slot; a helper)
    conn.execute("INSERT INTO orders VALUES (1, 'c1', 5), (2, 'c2', 6)")
    conn.execute("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(10,2) USING amount + 1")
    said.clear()
    oracle.run_stale()
    assert [m for m in said if "rewritten" in m]
    db.resync("orders")
    oracle.run()


def test_no_code_of_a_tracked_tables_owner_runs_as_argus(orders, login):
    """The comparison ran in the cycle, as argus's owner: planning its read of the
    source evaluated a partial index's predicate, a function its table's owner — no
    member of argus — wrote, which then granted itself a stream (a helper). Cycles read
    no source now, and `argus resync` reads it by COPY, which plans nothing: its first
    version read it as its owner, whose code `RESET ROLE` to the superuser running it (a
    helper)."""
    oracle = orders
    conn, db = oracle.conn, oracle.db
    app, app_dsn = login("app")
    conn.execute("CREATE TABLE public.calls (who text)")
    conn.execute("GRANT INSERT ON public.calls TO PUBLIC")
    conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(app)))
    conn.execute(sql.SQL("ALTER TABLE public.orders OWNER TO {}").format(sql.Identifier(app)))
    db.track("public.orders")
    oracle.run()
    oracle.register("big", QUERIES["big"])
    with psycopg.connect(app_dsn, autocommit=True) as conn_app:
        conn_app.execute("CREATE FUNCTION public.log_who() RETURNS int LANGUAGE sql "
                         "AS $$ INSERT INTO public.calls VALUES (current_user) RETURNING 1 $$")
        conn_app.execute("CREATE FUNCTION public.who(int) RETURNS int IMMUTABLE LANGUAGE plpgsql "
                         "AS $$ BEGIN PERFORM public.log_who(); RETURN $1; END $$")
        conn_app.execute("CREATE INDEX ON public.orders (amount) WHERE public.who(1) = 1")
        conn_app.execute("VACUUM FULL public.orders")
        conn_app.execute("UPDATE public.orders SET amount = 99 WHERE id = 2")
    oracle.run()  # (its check, run from scratch as this test's superuser, calls it too)
    owner = roles.owner_role(conn)
    assert owner not in {who for (who,) in conn.execute("SELECT who FROM public.calls")}
    conn.execute("DELETE FROM public.calls")
    db.resync("orders")  # (as a superuser: COPY, which plans nothing, reads the source)
    assert conn.execute("SELECT who FROM public.calls").fetchall() == []
    oracle.run()


def test_a_column_whose_scale_changed_refuses_the_tables_writes(orders):
    """A numeric's scale raised after `track` (or a varchar widened): the capture wrote
    the new values into argus's copy of the old type, rounded (or failed on length), no
    word said (a helper). Refused, naming the table, as a retyped column is."""
    oracle = orders
    conn, db = oracle.conn, oracle.db
    db.track("public.orders")
    oracle.run()
    conn.execute("ALTER TABLE public.orders ALTER COLUMN amount TYPE numeric(12,4)")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState,
                       match="a column of public.orders changed its type"):
        conn.execute("INSERT INTO public.orders VALUES (900, 'c1', 1.2345)")


def test_columns_renamed_in_each_others_place_are_said_and_resynced(captured):
    """Two columns of one type renamed in each other's place, or a column dropped and
    added again: no new file, no capture's complaint, and argus held the other column's
    values, or the old ones (a helper). Said as a rewrite; `argus resync` compares them."""
    oracle, method = captured
    conn, db = oracle.conn, oracle.db
    conn.execute("CREATE TABLE public.pairs (id int PRIMARY KEY, v int, w int)")
    conn.execute("INSERT INTO public.pairs SELECT g, g, -g FROM generate_series(1, 10) g")
    db.track("public.pairs", method=method)
    oracle.run()
    oracle.register("sums", "SELECT sum(v) AS v, sum(w) AS w, count(*) AS n FROM pairs")
    oracle.register("big_v", "SELECT id, v FROM pairs WHERE v > 5")
    said = _notices(db)
    for change in ("ALTER TABLE pairs RENAME v TO x; ALTER TABLE pairs RENAME w TO v; "
                   "ALTER TABLE pairs RENAME x TO w",
                   "ALTER TABLE pairs DROP COLUMN w; ALTER TABLE pairs ADD COLUMN w int"):
        conn.execute(change)  # test-authored DDL
        conn.execute("UPDATE pairs SET v = v + 1 WHERE id = 3")
        said.clear()
        oracle.run_stale()
        assert [m for m in said if "pairs" in m and "argus resync pairs" in m]
        db.resync("pairs")
        said.clear()
        oracle.run()
        assert not [m for m in said if "pairs" in m and "rewritten" in m]


def test_a_writers_open_truncate_holds_up_no_cycle(orders):
    """The TRUNCATE's capture records its new file on argus's row of the table, and a
    cycle that found the file new (a VACUUM FULL before) waited on that row for as
    long as the writer's transaction lasted, holding the cycle lock (a helper)."""
    oracle = orders
    db = oracle.db
    db.track("public.orders")
    oracle.run()
    oracle.conn.execute("VACUUM FULL public.orders")
    with psycopg.connect(db.dsn) as writer:  # (a transaction left open)
        writer.execute("TRUNCATE public.orders")
        with psycopg.connect(db.dsn, autocommit=True) as other:
            other.execute("SET statement_timeout = '10s'")
            (run,) = other.execute("SELECT argus.run_cycle()").fetchone()
        assert run is not None


def test_resync_refuses_a_source_that_is_no_longer_the_table_tracked(orders):
    """What resync checks holds until it reads (the source locked first: a helper changed
    its columns, its policies or its name while resync waited), and a child table added
    since `track`, whose rows no trigger of it captures and COPY reads none of, is said."""
    oracle = orders
    conn, db = oracle.conn, oracle.db
    db.track("public.orders")
    oracle.run()
    conn.execute("CREATE TABLE public.more () INHERITS (public.orders)")
    with pytest.raises(ArgusError, match="inheritance children"):
        db.resync("orders")
    conn.execute("DROP TABLE public.more")
    conn.execute("ALTER TABLE public.orders RENAME TO orders_old")
    conn.execute("CREATE TABLE public.orders (id int PRIMARY KEY, customer text NOT NULL, "
                 "amount numeric(10,2))")
    assert db.resync("orders") == 0  # (the table tracked, by its oid, under its new name)


def test_capture_triggers_disabled_are_said_until_resynced(orders):
    """The source's owner disabled argus's capture triggers, wrote, and nothing said that
    argus missed it (a helper). A cycle that finds them disabled says so, and goes on
    saying the answers may lack rows until `argus resync` (the writes of a disabling
    between two cycles are not seen: docs/tables.md)."""
    oracle = orders
    conn, db = oracle.conn, oracle.db
    db.track("public.orders")
    oracle.run()
    oracle.register("big", QUERIES["big"])
    said = _notices(db)
    conn.execute("ALTER TABLE public.orders DISABLE TRIGGER argus_track_update")
    conn.execute("UPDATE public.orders SET amount = amount + 100")
    oracle.run_stale()
    assert [m for m in said if "are disabled or gone" in m and "argus resync orders" in m]
    conn.execute("ALTER TABLE public.orders ENABLE ALWAYS TRIGGER argus_track_update")
    said.clear()
    oracle.run_stale()
    assert [m for m in said if "capture was off a while" in m]
    db.resync("orders")
    said.clear()
    oracle.run()
    assert not [m for m in said if "orders" in m]


def test_an_update_that_only_equality_calls_a_change_is_none_the_less(oracle):
    """The claim compares the columns whose types have a cheap equality first, and
    prints the rows only when those call them equal: a numeric spelled otherwise (1.5
    and 1.50) is still a change; values padded alike (char) or rounded alike by their
    type modifiers are none."""
    conn = oracle.conn
    conn.execute("CREATE TABLE public.t (id int PRIMARY KEY, c char(3), ts timestamp(0), "
                 "n numeric(6,2), m numeric)")
    conn.execute("INSERT INTO public.t VALUES (1, 'x', '2026-01-01 10:00', 1.5, 1.5), "
                 "(2, 'y  ', '2026-01-01 10:00', 2, 2)")
    oracle.db.track("public.t")
    oracle.run()  # (the rows copied at `track` wait in the inbox until a cycle)
    oracle.register("shown", "SELECT id, c::text AS c, ts, n, m::text AS m FROM t")
    conn.execute("UPDATE public.t SET c = 'x  ', ts = '2026-01-01 10:00:00.2', n = 1.50, "
                 "m = 1.50 WHERE id = 1")
    conn.execute("UPDATE public.t SET c = 'y', ts = '2026-01-01 09:59:59.6', n = 2.001, "
                 "m = 2 WHERE id = 2")
    oracle.run()
    at_ten = datetime(2026, 1, 1, 10)
    assert sorted(oracle.db.new_results("shown")) == [
        (1, "x", at_ten, Decimal("1.50"), "1.5", -1), (1, "x", at_ten, Decimal("1.50"), "1.50", 1)]
