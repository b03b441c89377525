"""Change capture (argus.track): an ordinary table that the application writes with
plain SQL is followed by an argus table. After every cycle each query's answer equals
the query run from scratch over the application's table itself (the oracle's search
path reaches public.orders, which has no mirror)."""

from __future__ import annotations

import random

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from argus.cli import main
from argus.errors import (ArgusError, DuplicateNameError, InvalidNameError, LoadError,
                          UnknownStreamError)

QUERIES = {
    "per_customer": "SELECT customer, count(*) AS n, sum(amount) AS total, min(amount) AS lo, "
                    "max(amount) AS hi FROM orders GROUP BY customer",
    "big": "SELECT id, amount FROM orders WHERE amount > 50",
    "customers": "SELECT DISTINCT customer FROM orders",
    "shipped": "SELECT o.id, s.carrier FROM orders o JOIN shipments s ON s.order_id = o.id",
    "top": "SELECT id, amount FROM orders ORDER BY amount DESC, id LIMIT 3",
    "lonely": "SELECT id FROM orders EXCEPT SELECT order_id FROM shipments",
}


@pytest.fixture
def orders(oracle):
    oracle.conn.execute("CREATE TABLE public.orders (id int PRIMARY KEY, customer text NOT NULL, "
                        "amount numeric(10,2))")
    oracle.conn.execute("INSERT INTO public.orders SELECT g, 'c' || g % 4, g * 3 "
                        "FROM generate_series(1, 20) g")
    oracle.conn.execute("CREATE SEQUENCE public.fresh_ids START 100000")
    return oracle


def test_a_tracked_table_follows_every_kind_of_statement(orders):
    """Multi-row inserts, updates (of the key too, of several rows at once), no-op updates,
    deletes, upserts, COPY, TRUNCATE, rolled-back transactions and savepoints, several
    statements on one key between cycles: after each cycle the answers equal the
    queries over public.orders."""
    oracle, conn = orders, orders.conn
    schema = oracle.db.track("public.orders")
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
