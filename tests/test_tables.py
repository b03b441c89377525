"""Tables (argus.tables): inputs whose rows are inserted, updated and deleted by a key.
Their changes reach every kind of node as retractions; each cycle's answers equal the
queries run from scratch over the tables as the application changed them (the oracle's
mirror takes the same changes)."""

from __future__ import annotations

from decimal import Decimal
import random

import psycopg
import pytest

import argus

from argus.errors import ArgusError, InvalidNameError, LoadError, UnsupportedQueryError

QUERIES = {
    "whole": "SELECT * FROM accounts",
    "rich": "SELECT id, balance FROM accounts WHERE balance > 500",
    "per_customer": "SELECT customer, count(*) AS n, sum(balance) AS total, min(balance) AS lo, "
                    "max(balance) AS hi FROM accounts GROUP BY customer",
    "customers": "SELECT DISTINCT customer FROM accounts",
    "paid": "SELECT p.pid, a.customer, p.amount FROM payments p JOIN accounts a "
            "ON a.id = p.account",
    "unpaid": "SELECT a.id, p.pid FROM accounts a LEFT JOIN payments p ON p.account = a.id",
    "no_payment": "SELECT id FROM accounts EXCEPT SELECT account FROM payments",
    "top": "SELECT id, balance FROM accounts ORDER BY balance DESC, id LIMIT 3",
    "ranked": "SELECT id, rank() OVER (PARTITION BY customer ORDER BY balance, id) AS r "
              "FROM accounts",
    "spend": "SELECT a.customer, sum(p.amount) AS spent FROM accounts a JOIN payments p "
             "ON p.account = a.id GROUP BY a.customer HAVING count(*) > 1",
}


@pytest.fixture
def accounts(oracle):
    oracle.create_table("accounts", {"id": "bigint", "customer": "text NOT NULL",
                                     "balance": "numeric(12,2) NOT NULL"}, primary_key="id")
    oracle.create_stream("payments", {"pid": "bigint", "account": "bigint",
                                      "amount": "numeric(12,2)"})
    return oracle


@pytest.mark.parametrize("seed, settings", [
    (1, {}), (2, {"truncate_inbox_bytes": 1, "maintenance": "rebuild"}),
    (3, {"maintenance": "apply"}), (4, {"plan_kept_rows": 2})],
    ids=["auto", "locked-rebuild", "apply", "kept-plan-tiers"])
def test_inserts_updates_and_deletes_reach_every_kind_of_node(accounts, seed, settings):
    """Random changes — new keys, updates that move a row to another group or past a
    filter, deletes of rows joined or ranked, deletes of keys never inserted, a key
    deleted and inserted again, updated twice in one cycle — checked by the oracle
    after every cycle, for each query registered before and after the changes began;
    claims taken row by row or whole, signed nodes applying or rebuilding; statements
    run with a plan kept for small deltas, a second one kept for up to ten times as
    many rows, or planned for the cycle (program/planned_or_kept: deltas of 1-20 rows
    against plan_kept_rows 2)."""
    accounts.db.configure(**settings)
    rng = random.Random(seed)
    for name in list(QUERIES)[:6]:
        accounts.register(name, QUERIES[name])
    present: dict[int, tuple] = {}
    next_id, pid = 0, 0
    for cycle in range(15):
        if cycle == 4:
            for name in list(QUERIES)[6:]:
                accounts.register(name, QUERIES[name])
        for _ in range(rng.randint(1, 4)):
            kind = rng.choice(["insert", "insert", "update", "delete", "absent"])
            if kind == "insert" or not present:
                rows = []
                for _ in range(rng.randint(1, 5)):
                    row = (next_id, rng.choice("abc"), rng.randint(0, 1000))
                    rows.append(row)
                    present[next_id] = row
                    next_id += 1
                accounts.insert("accounts", rows)
            elif kind == "update":
                keys = rng.sample(sorted(present), min(len(present), rng.randint(1, 3)))
                rows = [(k, rng.choice("abc"), rng.randint(0, 1000)) for k in keys]
                present.update((r[0], r) for r in rows)
                accounts.update("accounts", rows)
            elif kind == "delete":
                keys = rng.sample(sorted(present), min(len(present), rng.randint(1, 2)))
                for k in keys:
                    del present[k]
                accounts.delete("accounts", keys)
            else:
                accounts.delete("accounts", [10_000 + cycle])
        if present and rng.random() < 0.5:  # deleted and inserted again in one cycle
            k = rng.choice(sorted(present))
            accounts.delete("accounts", [k])
            present[k] = (k, "c", rng.randint(0, 1000))
            accounts.insert("accounts", [present[k]])
        payments = [(pid + i, rng.choice(sorted(present) or [0]), rng.randint(1, 50))
                    for i in range(rng.randint(0, 4))]
        pid += len(payments)
        accounts.insert("payments", payments)
        accounts.run()
    assert accounts.cycles_checked == 15
    assert accounts.db.conn.execute("SELECT count(*) FROM argus_streams.accounts"
                                    ).fetchone()[0] == len(present)


def test_a_table_evaluated_by_re_running(accounts):
    accounts.insert("accounts", [(1, "a", 10), (2, "b", 20)])
    accounts.run()
    accounts.register("again", QUERIES["per_customer"], evaluate="rerun")
    accounts.update("accounts", [(1, "b", 15)])
    accounts.delete("accounts", [2])
    accounts.insert("accounts", [(3, "a", 7)])
    accounts.run()


def test_the_history_takes_a_cycles_changes_at_the_rows_the_claim_read(accounts):
    """The flush finds each changed key's row by the ctid its claim read (no second probe
    of the key): an update stays in place (HOT: the key's index is not written), a
    delete removes the row, a new key is inserted; a network an older argus made (its
    table's delta without ctids) gets them when a newer argus connects."""
    conn, db = accounts.conn, accounts.db
    accounts.register("whole", QUERIES["whole"])
    accounts.register("per_customer", QUERIES["per_customer"])
    accounts.insert("accounts", [(i, f"c{i % 3}", i) for i in range(1, 41)])
    accounts.run()
    history = "argus_streams.accounts"
    (delta,) = conn.execute(
        "SELECT format('%I.%I', 'argus_net', 'n' || node_id || '_delta') "
        "FROM argus_catalog.streams WHERE name = 'accounts'").fetchone()
    conn.execute(f"ALTER TABLE {delta} DROP COLUMN argus_ctid")  # as argus 0.1 made it
    conn.execute("UPDATE argus_catalog.program_state SET code_version = 0")
    with argus.connect(db.dsn):
        pass  # (an upgrade, on connect)

    def hot_updates() -> int:  # (the cycles' session reports its counts when idle)
        db.conn.execute("SELECT pg_stat_force_next_flush()")
        return conn.execute("SELECT n_tup_hot_upd FROM pg_stat_user_tables "
                            "WHERE relid = %s::regclass", (history,)).fetchone()[0]

    hot_before = hot_updates()
    accounts.update("accounts", [(i, f"c{i % 3}", i + 1000) for i in range(1, 11)])
    accounts.delete("accounts", list(range(11, 21)))
    accounts.insert("accounts", [(i, "new", i) for i in range(41, 51)])
    accounts.update("accounts", [(21, "c0", 5)])
    accounts.update("accounts", [(21, "moved", 6)])  # the last change counts
    accounts.delete("accounts", [22])
    accounts.insert("accounts", [(22, "again", 7)])  # deleted and inserted in one cycle
    accounts.run()
    assert hot_updates() - hot_before >= 10
    assert sorted(conn.execute(f"SELECT id, customer, balance FROM {history}").fetchall()) \
        == sorted(db.results("whole"))


def test_a_load_that_breaks_the_key_fails_naming_it_and_loads_nothing(accounts):
    db = accounts.db
    accounts.insert("accounts", [(1, "a", 10), (2, "b", 20)])
    accounts.run()
    accounts.insert("accounts", [(3, "a", 5)])  # waiting, not yet claimed
    before = db.conn.execute("SELECT count(*) FROM argus_inbox.accounts").fetchone()[0]
    cases = [
        (lambda: db.insert("accounts", [(4, "a", 1), (1, "c", 2)]),
         r"^loading into table 'accounts' failed, nothing was loaded: an insert of the key "
         r"\(1\), which table accounts has already \(update it instead\)$"),
        (lambda: db.insert("accounts", [(3, "c", 2)]),  # a key inserted, not yet claimed
         r"an insert of the key \(3\), which table accounts has already"),
        (lambda: db.update("accounts", [(9, "c", 2)]),
         r"an update of the key \(9\), which table accounts does not have"),
        (lambda: db.insert("accounts", [(5, "a", 1), (5, "b", 2)]),
         r"2 changes to the key \(5\) in one load"),
        (lambda: db.update("accounts", [(1, "a", None)]), r"balance is not null"),
        (lambda: db.update("accounts", [(1, "a")]), r"an update names id, customer, balance"),
        (lambda: db.update("accounts", [{"id": 1, "customer": "a", "balanse": 3}]),
         r"an update names id, customer, balance; got id, customer, balanse"),
        (lambda: db.update("accounts", {"id": 1, "customer": "a", "balance": 3}),
         r"update takes a list of rows, got dict"),
        (lambda: db.delete("accounts", "12"), r"delete takes a list of keys, got str"),
    ]
    for load, message in cases:
        with pytest.raises(LoadError, match=message):
            load()
    assert db.conn.execute("SELECT count(*) FROM argus_inbox.accounts").fetchone()[0] == before
    accounts.delete("accounts", [3])  # a key only waiting can go too; an absent one is ignored
    accounts.delete("accounts", [77])
    accounts.register("whole", QUERIES["whole"])
    accounts.run()
    assert sorted(db.results("whole")) == [(1, "a", 10), (2, "b", 20)]


def test_what_a_table_cannot_be(db, accounts):
    with pytest.raises(InvalidNameError, match="key column 'nope'"):
        db.create_table("t", {"a": "int"}, primary_key="nope")
    with pytest.raises(ArgusError, match="is a stream, not a table"):
        db.delete("payments", [1])
    with pytest.raises(UnsupportedQueryError,
                       match="recursive step reads a table"):
        db.register_query("reach", """
            WITH RECURSIVE r(a, b) AS (SELECT pid, account FROM payments
              UNION SELECT r.a, x.id FROM r JOIN accounts x ON x.id = r.b)
            SELECT * FROM r""")


def test_a_window_over_a_table_column_follows_its_changes(oracle):
    """A table has no event time of its own, but a query may compare its columns with
    the stream clock (moved by a stream): rows enter and leave the window as the clock
    moves and as they are updated or deleted; nothing of a table is ever purged."""
    import datetime as dt

    oracle.create_table("tasks", {"id": "int", "due": "timestamptz NOT NULL",
                                  "owner": "text"}, primary_key=["id"])
    oracle.create_stream("ticks", {"t": "timestamptz"}, time_column="t")
    oracle.register("soon", "SELECT id, owner FROM tasks WHERE due <= argus_now() + "
                            "interval '1 hour'")
    oracle.register("per_owner", "SELECT owner, count(*) FROM tasks WHERE due > argus_now() "
                                 "GROUP BY owner")
    noon = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)
    oracle.insert("tasks", [(i, noon + dt.timedelta(minutes=30 * i), f"o{i % 3}")
                            for i in range(10)])
    oracle.insert("ticks", [(noon,)])
    oracle.run()
    for step in range(1, 6):
        oracle.update("tasks", [(step, noon + dt.timedelta(minutes=45 * step), "o9")])
        oracle.delete("tasks", [step + 5])
        oracle.insert("ticks", [(noon + dt.timedelta(minutes=40 * step),)])
        oracle.run()


def test_a_table_from_the_command_line_and_psql(fresh_dsn):
    """`argus table create`, then changes written in SQL as Spark or psql would: a row
    per change in the inbox, argus_op i (the default), u or d."""
    from click.testing import CliRunner

    import argus
    from argus.cli import main

    def invoke(*args):
        return CliRunner().invoke(main, [*args, "--dsn", fresh_dsn], catch_exceptions=False)

    out = invoke("table", "create", "stock", "sku:text", "shop:int", "qty:int",
                 "--key", "sku,shop")
    assert out.exit_code == 0, out.output
    assert "sku, shop" in invoke("stream", "list").output
    assert invoke("register", "low", "--sql",
                  "SELECT sku, sum(qty) FROM stock GROUP BY sku HAVING sum(qty) < 5"
                  ).exit_code == 0
    with argus.connect(fresh_dsn) as db:
        db.conn.execute("INSERT INTO argus_inbox.stock (sku, shop, qty) VALUES "
                        "('a', 1, 3), ('a', 2, 4), ('b', 1, 1)")
        db.run()
        assert sorted(db.results("low")) == [("b", 1)]
        db.conn.execute("INSERT INTO argus_inbox.stock (sku, shop, qty, argus_op) VALUES "
                        "('a', 2, NULL, 'd'), ('b', 1, 9, 'u')")
        db.run()
        assert sorted(db.results("low")) == [("a", 3)]
        with pytest.raises(psycopg.errors.UniqueViolation, match=r"an update of the key \(c,1\)"):
            db.conn.execute("INSERT INTO argus_inbox.stock VALUES ('c', 1, 1, 'u')")
    out = invoke("table", "create", "bad", "a:int")
    assert out.exit_code != 0 and "--key" in out.output


def test_a_writer_changes_the_table_it_may_load(oracle, login):
    """A writer granted a table loads, updates and deletes its rows: the key's check
    reads the table's history for it (it may not read it itself)."""
    import argus

    oracle.create_table("kv", {"k": "int", "v": "text"}, primary_key="k")
    oracle.register("all_kv", "SELECT * FROM kv")
    role, dsn = login("table_writer")
    oracle.db.grant("writer", role, stream="kv")
    with argus.connect(dsn) as writer:
        assert writer.insert("kv", [(1, "a"), (2, "b")]) == 2
        writer.run()
        assert writer.update("kv", [(1, "c")]) == 1
        assert writer.delete("kv", [2]) == 1
        with pytest.raises(LoadError, match=r"insert of the key \(1\)"):
            writer.insert("kv", [(1, "again")])
        writer.run()
    assert oracle.db.results("all_kv") == [(1, "c")]


def test_a_change_is_a_change_of_text_whatever_the_type_calls_equal(oracle):
    """An update to a value its type calls equal (1.0 and 1.00, '1 day' and '24 hours',
    0 and -0, jsonb's 1.0 and 1) is a change; and a column without equality (json)
    neither stops the cycle nor hides a change."""
    oracle.create_table("t", {"id": "int", "n": "numeric", "i": "interval", "j": "jsonb",
                              "f": "float8", "doc": "json"}, primary_key="id")
    oracle.register("shown", "SELECT id, n::text AS n, i::text AS i, j::text AS j, "
                             "f::text AS f, doc::text AS doc FROM t")
    oracle.insert("t", [(1, "1.0", "24 hours", '{"a": 1.0}', 0.0, '{"x": 1}')])
    oracle.run()
    oracle.update("t", [(1, "1.00", "1 day", '{"a": 1}', -0.0, '{"x":  1}')])
    oracle.run()
    assert oracle.db.results("shown") == [(1, "1.00", "1 day", '{"a": 1}', "-0", '{"x":  1}')]


EXTREMES = {
    "per_group": "SELECT g, min(v) AS lo, max(v) AS hi, sum(v) AS total, avg(v) AS mean, "
                 "count(v) AS n FROM readings GROUP BY g",
    "overall": "SELECT min(v) AS lo, max(v) AS hi, sum(v) AS total FROM readings",
    "joined": "SELECT r.g, min(p.w) AS lo, max(r.v) AS hi FROM readings r "
              "LEFT JOIN probes p ON p.g = r.g GROUP BY r.g",
}


@pytest.mark.parametrize("maintenance", ["auto", "apply", "rebuild"])
def test_min_max_under_retraction_keep_the_rows_at_the_extreme(oracle, maintenance):
    """MIN/MAX, and a numeric sum's scale (a max of scale(v)), over a table whose values
    repeat (few values, several scales, NULLs): a group is re-read only when the last
    row at its extreme leaves, so the count kept beside each extreme must stay exact
    (or unknown, after a rebuild) through inserts, updates and deletes — checked
    against the rows, and the answers by the oracle, after every cycle."""
    db = oracle.db
    db.configure(maintenance=maintenance)
    oracle.create_table("readings", {"id": "int", "g": "text", "v": "numeric"}, primary_key="id")
    oracle.create_stream("probes", {"g": "text", "w": "int"})
    for name, query in EXTREMES.items():
        oracle.register(name, query)
    rng = random.Random(len(maintenance))
    values = ["1", "1.0", "1.50", "2", "2.000", "-3", None]
    present: set[int] = set()
    for cycle in range(25):
        rows = [(i, rng.choice("xy"), rng.choice(values)) for i in rng.sample(range(40), 6)]
        fresh = [r for r in rows if r[0] not in present]
        moved = [r for r in rows if r[0] in present]
        gone = rng.sample(sorted(present - {r[0] for r in rows}), min(3, len(present) // 4))
        oracle.insert("readings", fresh)
        oracle.update("readings", moved)
        oracle.delete("readings", gone)
        present = (present | {r[0] for r in rows}) - set(gone)
        if cycle % 5 == 0:
            oracle.insert("probes", [(rng.choice("xyz"), rng.randint(0, 3))])
        oracle.run()
        node = db.conn.execute(  # per_group's node: grouped, over the table itself
            "SELECT n.hist_schema, n.hist_name FROM argus_catalog.nodes n "
            "JOIN argus_catalog.edges e ON e.child_id = n.node_id "
            "JOIN argus_catalog.nodes p ON p.node_id = e.parent_id AND p.kind = 'stream' "
            "WHERE n.kind = 'aggregate' AND p.hist_name = 'readings' "
            "AND n.definition -> 'groups' <> '[]'").fetchone()
        wrong = db.conn.execute(psycopg.sql.SQL(
            """SELECT n.g1 FROM {} AS n
                WHERE n.argus_a1_mcount <> (SELECT count(*) FROM argus_streams.readings r
                                             WHERE r.g IS NOT DISTINCT FROM n.g1 AND r.v = n.a1)
                   OR n.argus_a2_mcount <> (SELECT count(*) FROM argus_streams.readings r
                                             WHERE r.g IS NOT DISTINCT FROM n.g1 AND r.v = n.a2)"""
        ).format(psycopg.sql.Identifier(*node))).fetchall()
        assert wrong == [], f"cycle {cycle}: wrong counts at the extreme for groups {wrong}"
    assert oracle.cycles_checked == 25


def test_deletes_of_keys_the_table_does_not_have_are_counted_and_ignored(accounts):
    accounts.insert("accounts", [(1, "a", 10), (2, "b", 20)])
    accounts.run()
    accounts.delete("accounts", [7, 1])  # 7: never inserted
    accounts.insert("accounts", [(3, "c", 5)])
    accounts.delete("accounts", [3, 8])  # 3: inserted in this cycle; 8: never
    accounts.run()
    ignored = accounts.conn.execute("SELECT ignored_deletes FROM argus.runs "
                                    "ORDER BY run_id DESC LIMIT 1").fetchone()[0]
    assert ignored == {"accounts": 2}
    accounts.run()
    assert accounts.conn.execute("SELECT ignored_deletes FROM argus.runs "
                                 "ORDER BY run_id DESC LIMIT 1").fetchone()[0] is None


def test_sums_over_a_declared_scale_print_as_postgresql_prints_them(oracle):
    """A numeric(12,2) column's sums, averages and variances keep no largest scale
    (every value has two decimals), nor do sums of arithmetic that fixes the scale
    (+, - and * of such columns, integers and literals); an undeclared numeric's and a
    division's do. The oracle compares numbers by value, so the answers are compared
    here as text, after inserts, updates and deletes."""
    db = oracle.db
    oracle.create_table("prices", {"id": "int", "g": "text", "p": "numeric(12,2)",
                                   "q": "numeric", "r": "numeric(6,3)", "n": "int"},
                        primary_key="id")
    columns = {"sp": "sum(p)", "ap": "avg(p)", "vp": "var_samp(p)", "sq": "sum(q)",
               "aq": "avg(q)", "spq": "sum(p * q)", "spr": "sum(p * (1 - r))",
               "snr": "sum(-p - r * n + 0.5)", "apr": "avg(p * 2.50 * (1 + r))",
               "sd": "sum(p / 4)"}
    query = ("SELECT g, " + ", ".join(f"{f} AS {c}" for c, f in columns.items())
             + " FROM prices GROUP BY g")
    oracle.register("sums", query)
    definition = db.conn.execute("SELECT definition FROM argus_catalog.nodes "
                                 "WHERE kind = 'aggregate'").fetchone()[0]
    kept = {e[2]: e[4] for e in definition["aggregates"]}
    assert kept['"t1"."p"'] == "numeric:2"
    assert kept['"t1"."p" * (1 - "t1"."r")'] == "numeric:5"
    assert kept['-"t1"."p" - "t1"."r" * "t1"."n" + 0.5'] == "numeric:3"
    assert kept['"t1"."p" * 2.50 * (1 + "t1"."r")'] == "numeric:7"
    assert kept['"t1"."p" / 4'] == kept['"t1"."q"'] == "numeric"  # a largest scale kept
    rng = random.Random(4)
    present = set()
    shown = "ROW(g, " + ", ".join(columns) + ")::text"
    for _ in range(12):
        rows = [(i, rng.choice("xy"), rng.choice(["1.5", "2", "0.125", "-3.25"]),
                 rng.choice(["1", "1.0", "0.5", "2.250"]), rng.choice(["0.05", "1", "0.125"]),
                 rng.randint(-3, 3)) for i in rng.sample(range(30), 5)]
        oracle.churn("prices", rows, present,
                     rng.sample(sorted(present | {r[0] for r in rows}), 2))
        oracle.run()
        actual = {r[0] for r in db.conn.execute(f"SELECT {shown} FROM argus_results.sums")}
        scratch = query.replace("prices", "argus_streams.prices")
        expected = {r[0] for r in db.conn.execute(f"SELECT {shown} FROM ({scratch}) s")}
        assert actual == expected


LETTERS = "abcdefhiklmnopqrstuvwx"  # the one-letter aliases argus's own SQL uses, and more


def test_columns_named_as_argus_aliases_its_tables_and_streams(oracle):
    """Columns named h, l, p, c, d, o, x, … : argus's SQL reads a whole row by its alias
    in places, and a table with a column h made every cycle fail ('column reference "h"
    is ambiguous'): no query of the database advanced."""
    columns = {"id": "int", **{letter: "int" for letter in LETTERS}}
    oracle.create_table("tb", columns, ["id"])
    oracle.create_stream("st", columns)
    first, second = LETTERS[:3], LETTERS[3:6]
    for name in ("tb", "st"):
        oracle.register(f"{name}_rows", f"SELECT * FROM {name} WHERE h > 2")
        oracle.register(f"{name}_per_h", f"SELECT h, count(*) AS n, sum(l) AS sl, "
                                          f"count(DISTINCT p) AS dp FROM {name} GROUP BY h")
        oracle.register(f"{name}_ranked", f"SELECT id, h, row_number() OVER (PARTITION BY h "
                                          f"ORDER BY o, id) AS r FROM {name}")
        oracle.register(f"{name}_joined", f"SELECT a.id, b.id AS other FROM {name} a "
                                          f"JOIN {name} b ON a.h = b.x")
        oracle.register(f"{name}_distinct", f"SELECT DISTINCT {', '.join(first)} FROM {name} "
                                            f"UNION SELECT {', '.join(second)} FROM {name}")

    def row(i: int) -> tuple:
        return (i, *((i * (k + 3)) % 5 for k in range(len(LETTERS))))

    for cycle in range(3):
        rows = [row(10 * cycle + i) for i in range(6)]
        oracle.insert("tb", rows)
        oracle.insert("st", rows)
        if cycle:
            oracle.update("tb", [(row(1)[0], *row(7)[1:])])
            oracle.delete("tb", [(10 * (cycle - 1) + 2,)])
        oracle.run()


@pytest.mark.parametrize("exists", ["EXISTS", "NOT EXISTS"])
def test_a_semi_join_with_more_than_its_keys_follows_updates_and_deletes(oracle, exists):
    """TPC-H Q21's shape: a left row matched by an equality and another conjunct
    (`<>`). The rows whose partners changed are found by the changed keys first (an
    equality semi-join PostgreSQL probes the left history's index with), then judged by
    the whole condition; over a table's updates and deletes (partners lost, gained, keys
    moved, NULL keys) and over a stream that only grows, each cycle's answer is the
    query's."""
    import random

    rng = random.Random(21)
    oracle.create_table("items", {"id": "int", "o": "int", "s": "int"}, primary_key="id")
    oracle.create_stream("picks", {"o": "int", "s": "int"})
    condition = "i2.o = i1.o AND i2.s <> i1.s"
    oracle.register("by_table", f"SELECT i1.id, i1.o FROM items i1 WHERE {exists} "
                                f"(SELECT 1 FROM items i2 WHERE {condition} AND i2.id <> i1.id)")
    oracle.register("by_stream", f"SELECT i1.id, i1.s FROM items i1 WHERE {exists} "
                                 f"(SELECT 1 FROM picks i2 WHERE {condition})")

    def some() -> int | None:
        return None if rng.random() < 0.1 else rng.randrange(6)

    blocks = [b for (b,) in oracle.db.conn.execute(
        "SELECT cycle_block FROM argus_catalog.nodes WHERE kind = 'join'")]
    assert sum(") IN (SELECT" in b for b in blocks) == 2  # each query's, by its keys
    ids = list(range(40))
    oracle.insert("items", [(i, some(), some()) for i in ids])
    oracle.run()
    for _ in range(8):
        oracle.update("items", [(i, some(), some()) for i in rng.sample(ids, 6)])
        gone = rng.sample(ids, 3)
        oracle.delete("items", gone)
        ids = [i for i in ids if i not in gone] + [max(ids) + 1 + k for k in range(3)]
        oracle.insert("items", [(i, some(), some()) for i in ids[-3:]])
        oracle.insert("picks", [(some(), some()) for _ in range(4)])
        oracle.run()


def test_a_bpchar_keeps_its_trailing_spaces_through_a_signed_node(oracle):
    """Found by a helper: 'x' and 'x  ' are equal as bpchar and hash alike, and the text
    the signed flush told equal values apart by is the cast to text, which drops the
    spaces: both copies were kept as one of the forms. Its output keeps them now."""
    oracle.create_table("a", {"k": "int", "c": "bpchar"}, primary_key="k")
    oracle.create_table("b", {"k": "int"}, primary_key="k")
    oracle.register("p", "SELECT a.c FROM a JOIN b ON b.k = a.k % 2")
    oracle.insert("b", [(0,), (1,)])
    oracle.insert("a", [(1, "x"), (2, "x  "), (3, "x ")])
    oracle.run()
    assert sorted(r[0] for r in oracle.db.results("p")) == ["x", "x ", "x  "]
    oracle.delete("a", [2])
    oracle.run()
    oracle.update("a", [(1, "x   ")])
    oracle.run()
    assert sorted(r[0] for r in oracle.db.results("p")) == ["x ", "x   "]


def test_a_distinct_value_leaves_in_the_form_it_was_kept_in(oracle):
    """Found by a helper: numeric 0.000 and 0 are one value to DISTINCT, which keeps the
    first form seen; when the value left, it was retracted in the form of the copy
    leaving (0), and the join above, holding 0.000, kept it for ever."""
    oracle.create_table("a", {"k": "int", "n": "numeric"}, primary_key="k")
    oracle.create_table("b", {"k": "int", "m": "int"}, primary_key="k")
    oracle.register("d", "SELECT d.n, b.m FROM (SELECT DISTINCT n FROM a) d JOIN b ON b.m = 1")
    oracle.insert("a", [(1, Decimal("0.000"))])
    oracle.insert("b", [(1, 1)])
    oracle.run()
    for step in (lambda: oracle.insert("a", [(2, Decimal("0"))]),
                 lambda: oracle.delete("a", [1]), lambda: oracle.delete("a", [2])):
        step()
        oracle.run()
    assert oracle.db.results("d") == []


@pytest.mark.parametrize("inner", [
    "SELECT DISTINCT n FROM a",
    "SELECT n, count(*) AS c FROM a GROUP BY n",
    "SELECT n, max(k) AS c FROM a GROUP BY n",
    "SELECT n FROM a INTERSECT SELECT n FROM c",
    "SELECT n FROM a EXCEPT SELECT n FROM c",
    "SELECT n FROM a UNION SELECT n FROM c"])
def test_a_rebuilt_node_keeps_the_form_its_consumers_hold(oracle, inner):
    """The flaky test above, found: a node keeping one row for equal values, rebuilt from
    its parents (the cycle's choice by learned costs) when the copy in the kept form had
    left, kept the other form with no change told; the join above, applying its changes,
    then failed to retract the form it held. The costs are set so that every node but
    the join would rebuild."""
    for table in ("a", "c"):
        oracle.create_table(table, {"k": "int", "n": "numeric"}, primary_key="k")
    oracle.create_table("b", {"k": "int", "m": "int"}, primary_key="k")
    oracle.register("q", f"SELECT s.*, b.m FROM ({inner}) s JOIN b ON b.m = 1")
    joins = {n for (n,) in oracle.conn.execute(
        "SELECT node_id FROM argus_catalog.nodes WHERE kind = 'join'").fetchall()}
    steps = [[("a", [(1, Decimal("0.000"))]), ("b", [(1, 1)]), ("c", [(1, Decimal("0.0"))])],
             [("a", [(2, Decimal("0"))]), ("c", [(2, Decimal("0.00"))])],
             [("a", [1]), ("c", [1])], [("a", [(3, Decimal("0.0000"))])],
             [("a", [2]), ("c", [2])], [("a", [3])]]
    for step in steps:
        for table, rows in step:
            (oracle.insert if isinstance(rows[0], tuple) else oracle.delete)(table, rows)
        oracle.rig_maintenance(lambda node_id: node_id not in joins)
        oracle.run()
    assert oracle.db.results("q") == []


@pytest.mark.parametrize("op, column, first, second", [
    ("EXCEPT ALL", "numeric", Decimal("0.000"), Decimal("0")),
    ("EXCEPT", "float8", -0.0, 0.0),
    ("INTERSECT", "interval", "1 day", "24 hours")])
def test_a_set_operations_value_leaves_in_the_form_it_was_kept_in(oracle, op, column, first,
                                                                   second):
    """Found by a helper: equal values in different forms are one value to INTERSECT
    and EXCEPT; a copy left in the form of the rows that made it leave, and the history,
    holding the other form, kept it for ever."""
    oracle.create_table("a", {"k": "int", "n": column}, primary_key="k")
    oracle.create_table("b", {"k": "int", "n": column}, primary_key="k")
    oracle.register("q", f"SELECT n FROM a {op} SELECT n FROM b")
    oracle.insert("a", [(1, first)])
    if op == "INTERSECT":
        oracle.insert("b", [(1, second)])
        oracle.run()
        oracle.delete("b", [1])
    else:
        oracle.run()
        oracle.insert("b", [(1, second)])
    oracle.run()
    assert oracle.db.results("q") == []


def test_a_top_k_over_numeric_sums_reads_its_first_groups_by_index(oracle):
    """A Top-K over a SUM (a numeric of no precision: no B-tree entry holds every value)
    reads each cycle's candidates through an index on the sum as a float8, clamped past
    that type's range: exact through ties that only the float8 makes (values 1e-30
    apart, past 1e308), NaN, ±Infinity and NULL sums, as groups rise, fall and leave."""
    oracle.create_table("t", {"k": "int", "g": "int", "x": "numeric"}, ["k"])
    oracle.register("top", "SELECT g, sum(x) AS s FROM t GROUP BY g "
                           "ORDER BY s DESC, g LIMIT 3")
    oracle.register("bottom", "SELECT g, sum(x) AS s FROM t GROUP BY g "
                              "ORDER BY s NULLS FIRST, g DESC LIMIT 2")
    defined = [d for (d,) in oracle.conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'argus_net' "
        "AND indexname LIKE '%top_idx'")]
    assert len(defined) == 2 and all("double precision" in d for d in defined)
    values = ["1e400", "-1e400", "1e308", "1.000000000000000000000000000001", "1", "NaN",
              "Infinity", "-Infinity", None, "0.5", "-2", "1e-30"]
    rng = random.Random(3)
    present: set = set()
    oracle.churn("t", [(k, k % 40, rng.choice(values)) for k in range(120)], present, [])
    oracle.run()
    for _ in range(10):
        oracle.rig_maintenance(lambda node: False)  # (each node applies its changes)
        rows = {k: (k, rng.randrange(40), rng.choice(values))
                for k in (rng.randrange(150) for _ in range(3))}
        left = sorted(present - set(rows))
        oracle.churn("t", list(rows.values()), present, rng.sample(left, 2))
        oracle.run()
