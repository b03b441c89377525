"""Sharing (issue: incremental multiple-query optimization): the nodes each query of a
family ends up using (fixtures/sharing.txt), dropping, and the index's bookkeeping."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

import argus

from .catalog_snapshot import snapshot
from .fixtures import cases
from .oracle import Oracle

RESERVED = {"title", "sharing", "layout"}


def transfer_rows(rng: random.Random, start: int, n: int, day: int = 1) -> list[tuple]:
    return [(i, f"2024-01-{day + rng.randint(0, 20):02d}", f"a{rng.randint(0, 6)}",
             f"a{rng.randint(0, 6)}", rng.randint(1, 10_000)) for i in range(start, start + n)]


def setup(db) -> Oracle:
    oracle = Oracle(db)
    # (its time column: never infinite, so that a band of days implies a wider one)
    oracle.create_stream("transfers", {"tran_id": "bigint", "tran_date": "date",
                                       "sender": "text", "receiver": "text",
                                       "amount": "numeric(14,2)"}, time_column="tran_date")
    oracle.insert("transfers", transfer_rows(random.Random(7), 0, 300))
    oracle.run()
    return oracle


def shapes(db, creators: dict[int, str]) -> dict[str, str]:
    out = {}
    for info in db.queries():
        out[info.name] = " ".join(f"{n.kind}@{creators[n.id]}" for n in info.nodes
                                  if n.kind != "stream")
    return out


@pytest.mark.parametrize("case", cases("sharing.txt"), ids=lambda c: c["title"])
def test_network_shape(case, fresh_dsn):
    with argus.connect(fresh_dsn, sharing=case.get("sharing", "selection")) as db:
        db.configure(layout=case.get("layout", "cost"))
        check_shape(case, setup(db))


def check_shape(case: dict, oracle: Oracle) -> None:
    queries = {k: v for k, v in case.items() if k not in RESERVED and not k.startswith("nodes")}
    creators: dict[int, str] = {}
    for name, sql_text in queries.items():
        info = oracle.register(name, sql_text)  # checks the backfilled answer
        creators |= {n.id: name for n in info.nodes if n.created}
    expected = {k.split()[1]: v for k, v in case.items() if k.startswith("nodes ")}
    assert shapes(oracle.db, creators) == expected
    oracle.insert("transfers", transfer_rows(random.Random(8), 300, 200, day=5))
    oracle.run()  # checks every query


def test_dropping_a_query_keeps_what_others_share(transfers):
    db = transfers.db
    transfers.insert("transfers", transfer_rows(random.Random(1), 0, 200))
    transfers.run()
    transfers.register("wide", "SELECT r1.tran_id, r2.tran_id AS b FROM transfers r1, "
                       "transfers r2 WHERE r2.sender = r1.receiver AND r1.amount > 1000")
    transfers.register("narrow", "SELECT r1.tran_id FROM transfers r1, transfers r2 "
                       "WHERE r2.sender = r1.receiver AND r1.amount > 5000")
    before = {n.id for n in db.query("narrow").nodes}
    transfers.unregister("wide")
    after = {row[0] for row in db.conn.execute("SELECT node_id FROM argus_catalog.nodes")}
    assert before <= after  # narrow reads wide's join: it stays
    transfers.insert("transfers", transfer_rows(random.Random(2), 200, 100))
    transfers.run()
    transfers.unregister("narrow")
    kinds = [r[0] for r in db.conn.execute("SELECT kind FROM argus_catalog.nodes")]
    assert kinds == ["stream"]
    leftovers = db.conn.execute(
        "SELECT (SELECT count(*) FROM argus_catalog.topology), "
        "(SELECT count(*) FROM argus_catalog.predsets), "
        "(SELECT count(*) FROM argus_catalog.literals)").fetchone()
    assert leftovers == (0, 0, 0)


def test_the_index_records_each_node_relative_to_its_sources(transfers):
    transfers.register("q", "SELECT r1.tran_id FROM transfers r1 JOIN transfers r2 "
                       "ON r2.sender = r1.receiver WHERE r1.amount > 1000 AND "
                       "r2.tran_date BETWEEN r1.tran_date AND r1.tran_date + 20")
    rows = transfers.db.conn.execute(
        "SELECT kind, predset, on_parents, sources, svoa, jvoas FROM argus.index "
        "ORDER BY node_id").fetchall()
    stream = transfers.db.conn.execute(
        "SELECT node_id FROM argus_catalog.streams").fetchone()[0]
    (sel, sel_pred, _, sel_sources, sel_svoa, _), (join, pred, on, sources, svoa, jvoas) = rows
    assert (sel, sel_pred, sel_sources, sel_svoa) == ("select", '"i1"."amount" > 1000',
                                                      [stream], stream)
    assert join == "join" and sources == [stream, stream]
    assert pred == ('"i1"."amount" > 1000 AND "i1"."receiver" = "i2"."sender" AND '
                    '"i1"."tran_date" - "i2"."tran_date" >= -20 AND '
                    '"i1"."tran_date" <= "i2"."tran_date"')
    assert '"i1"."amount"' not in on  # the selection below it applied that
    assert jvoas == [stream, stream] and svoa is not None


def test_an_unknown_strategy_is_refused(fresh_dsn):
    with pytest.raises(ValueError, match="sharing must be one of"):
        argus.connect(fresh_dsn, sharing="greedy")


def test_a_failed_registration_leaves_shared_nodes_as_they_were(transfers):
    """Enrichment and expansion change shared nodes inside the registration's
    transaction: a registration that fails afterwards undoes them."""
    db = transfers.db
    transfers.insert("transfers", transfer_rows(random.Random(3), 0, 100))
    transfers.run()
    transfers.register("q", "SELECT tran_id FROM transfers WHERE amount > 1000")
    transfers.register("g", "SELECT sender, count(*) AS n FROM transfers GROUP BY sender")
    before = snapshot(db.conn)
    columns = "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
    tables = [r[0] for r in db.conn.execute(
        "SELECT format('%I.%I', hist_schema, hist_name) FROM argus_catalog.nodes")]
    shapes_before = {t: db.conn.execute(columns, (t,)).fetchall() for t in tables}
    # needs receiver and sender added to q's node, then fails on its duplicate names
    with pytest.raises(argus.QueryError, match="distinct name"):
        db.register_query("bad", "SELECT tran_id, receiver AS x, sender AS x "
                          "FROM transfers WHERE amount > 1000")
    # needs sum(amount) added to g's node, then fails the same way
    with pytest.raises(argus.QueryError, match="distinct name"):
        db.register_query("bad", "SELECT sender AS x, sum(amount) AS x FROM transfers "
                          "GROUP BY sender")
    assert snapshot(db.conn) == before
    assert {t: db.conn.execute(columns, (t,)).fetchall() for t in tables} == shapes_before
    transfers.insert("transfers", transfer_rows(random.Random(4), 100, 50))
    transfers.run()


def _history_indexes(conn) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
        "WHERE indrelid = 'argus_streams.transfers'::regclass ORDER BY 1")]


def test_join_indexes_are_one_per_leading_key_and_go_with_the_last_query(transfers):
    """An equality join indexes (tran_id); a window join on the same key needs (tran_id,
    tran_date), which replaces it for both; each query keeps its answer. A text key is
    indexed by its hash (a value may be too long for a B-tree), one index for both."""
    db = transfers.db
    transfers.insert("transfers", transfer_rows(random.Random(3), 0, 200))
    transfers.run()
    transfers.register("equal", "SELECT r1.tran_id, r2.amount AS b FROM transfers r1, "
                       "transfers r2 WHERE r1.tran_id = r2.tran_id AND r1.amount > 9000")
    assert [i for i in _history_indexes(db.conn) if "(tran_id)" in i]
    transfers.register("windowed", "SELECT r1.tran_id, r2.amount AS b FROM transfers r1, "
                       "transfers r2 WHERE r1.tran_id = r2.tran_id AND r1.amount > 8000 "
                       "AND r2.tran_date BETWEEN r1.tran_date AND r1.tran_date + 3")
    indexes = _history_indexes(db.conn)
    assert not [i for i in indexes if "(tran_id)" in i], indexes  # replaced, not kept
    assert [i for i in indexes if "(tran_id, tran_date)" in i], indexes
    transfers.register("texts", "SELECT r1.tran_id, r2.tran_id AS b FROM transfers r1, "
                       "transfers r2 WHERE r1.receiver = r2.receiver AND r1.amount > 9000 "
                       "AND r2.tran_date BETWEEN r1.tran_date AND r1.tran_date + 3")
    assert [i for i in _history_indexes(db.conn) if "hash (receiver)" in i]
    transfers.insert("transfers", transfer_rows(random.Random(4), 200, 100, day=5))
    transfers.run()
    transfers.unregister("windowed")
    assert [i for i in _history_indexes(db.conn) if "(tran_id, tran_date)" in i]  # equal's
    transfers.insert("transfers", transfer_rows(random.Random(5), 300, 100, day=8))
    transfers.run()


def test_new_node_histories_are_analyzed_at_registration(transfers):
    """Planned without statistics until autovacuum gets to them, a cycle at 150 queries
    ran 2.6x slower."""
    transfers.insert("transfers", transfer_rows(random.Random(6), 0, 300))
    transfers.run()
    transfers.register("q", "SELECT r1.sender, count(*) FROM transfers r1, transfers r2 "
                       "WHERE r1.receiver = r2.sender AND r2.amount > 100 GROUP BY r1.sender")
    never = transfers.conn.execute(
        "SELECT n.node_id FROM argus_catalog.nodes n JOIN pg_class c "
        "ON c.oid = format('%I.%I', n.hist_schema, n.hist_name)::regclass "
        "WHERE n.kind <> 'stream' AND c.relkind = 'r' AND c.reltuples < 0").fetchall()
    assert never == []


def test_a_regroup_of_a_growing_aggregate_takes_its_extremes_without_rereading(transfers):
    """Coarse MIN/MAX computed from a finer aggregate over a stream: the finer groups
    only grow, so a change of one (a retraction and an insertion) never needs the
    coarse extreme re-read from the finer rows (no index for it, no re-read)."""
    transfers.insert("transfers", transfer_rows(random.Random(7), 0, 300))
    transfers.run()
    transfers.register("fine", "SELECT sender, receiver, min(amount) AS lo, count(*) AS n "
                               "FROM transfers GROUP BY sender, receiver")
    transfers.register("coarse", "SELECT sender, min(amount) AS lo, count(*) AS n "
                                 "FROM transfers GROUP BY sender")
    conn = transfers.db.conn
    parents = dict(conn.execute(
        "SELECT p.kind, n.layout FROM argus_catalog.nodes n JOIN argus_catalog.edges e "
        "ON e.child_id = n.node_id JOIN argus_catalog.nodes p ON p.node_id = e.parent_id "
        "WHERE n.kind = 'aggregate'"))
    assert set(parents) == {"stream", "aggregate"}  # the coarse one regroups the fine one
    assert all(d.get("grows") for d in parents.values())
    assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'argus_n%_groups'"
                        ).fetchone()[0] == 0
    for day in (1, 2):
        transfers.insert("transfers", transfer_rows(random.Random(day), 300 + 100 * day, 100,
                                                    day=day))
        transfers.run()  # the oracle checks both answers


def test_aggregates_moved_onto_a_finer_one_keep_their_query_s_scope(transfers, fresh_dsn):
    """A query registered without sharing has its own aggregate, beside an equal shared
    one. A finer aggregate registered later takes the shared one over (computed from
    it), never the private one: a query without sharing reads no other query's node.
    (Found by the differential fuzzer, seed 1008: the moved aggregate lost its query's
    scope, took its twin's signature, and the registration failed.)"""
    transfers.insert("transfers", transfer_rows(random.Random(7), 0, 300))
    transfers.run()
    coarse = "SELECT sender, max(amount) AS hi, count(*) AS n FROM transfers GROUP BY sender"
    transfers.register("coarse", coarse)
    own = transfers.db
    with argus.connect(fresh_dsn, sharing="none") as alone:
        transfers.db = alone
        transfers.register("coarse_alone", coarse)
    transfers.db = own
    transfers.register("fine", "SELECT sender, receiver, max(amount) AS hi, count(*) AS n "
                               "FROM transfers GROUP BY sender, receiver")
    parents = transfers.conn.execute(
        "SELECT p.kind FROM argus_catalog.nodes n JOIN argus_catalog.edges e "
        "ON e.child_id = n.node_id JOIN argus_catalog.nodes p ON p.node_id = e.parent_id "
        "WHERE n.kind = 'aggregate' ORDER BY n.node_id").fetchall()
    assert parents == [("aggregate",), ("stream",), ("stream",)]
    for day in (1, 2):
        transfers.insert("transfers", transfer_rows(random.Random(day), 300 + 100 * day, 100,
                                                    day=day))
        transfers.run()


@pytest.mark.parametrize("shared", [
    "SELECT id, v FROM t WHERE id > 1000",
    "SELECT g, count(*) AS n FROM t GROUP BY g"])
def test_a_query_without_sharing_lends_no_node_to_another(oracle, fresh_dsn, shared):
    """A query registered without sharing keeps its nodes to itself: a shared query
    whose rows its selection holds (the computation index), or whose groups its
    aggregate could be computed from, gets its own; so a row only the private query
    fails on isolates it alone, and no private node is moved onto a shared one. (A
    helper's finding: the shared query was computed from the private selection, and
    isolated with it.)"""
    oracle.create_stream("t", {"id": "int", "g": "int", "v": "int"})
    oracle.insert("t", [(i % 7, i % 3, 5) for i in range(2000)])
    oracle.run()
    own = oracle.db
    with argus.connect(fresh_dsn, sharing="none") as alone:
        oracle.db = alone
        oracle.register("private", "SELECT id, g, v FROM t WHERE 100 / v > 3 OR id > 1000")
        oracle.register("private_groups", "SELECT g, id, count(*) AS n FROM t GROUP BY g, id")
    oracle.db = own
    oracle.register("shared", shared)
    mine = {n for (n,) in oracle.conn.execute(
        "SELECT node_id FROM argus_catalog.nodes WHERE private_to IS NOT NULL")}
    used = {n for (n,) in oracle.conn.execute(
        "SELECT node_id FROM argus_catalog.query_nodes JOIN argus_catalog.queries "
        "USING (query_id) WHERE name = 'shared'")}
    assert mine and not mine & used
    oracle.insert("t", [(7, 1, 0), (2000, 1, 5)])
    assert set(oracle.run().failed) == {"private"}
    oracle.insert("t", [(3000, 2, 5)])
    oracle.run()  # the shared query is exact (the oracle)


def test_implied_bounds_filter_every_instance_before_the_joins(transfers):
    """ARGUS's transitivity inference: the second and third transfers of the chain are
    bounded too (amount > 5000), so their selection (one node, shared by both) keeps only
    those rows; the answer is PostgreSQL's (the oracle)."""
    rng = random.Random(8)
    transfers.insert("transfers", transfer_rows(rng, 0, 400))
    transfers.run()
    info = transfers.register("chain", """
        SELECT r1.tran_id, r2.tran_id AS second, r3.tran_id AS third
          FROM transfers r1, transfers r2, transfers r3
         WHERE r1.receiver = r2.sender AND r2.receiver = r3.sender
           AND r1.amount > 10000 AND r2.amount >= r1.amount * 0.5
           AND r3.amount = r2.amount""")
    predicates = {p for (p,) in transfers.conn.execute(
        "SELECT definition->>'predicate' FROM argus_catalog.nodes WHERE node_id = ANY(%s) "
        "AND kind = 'select'", ([n.id for n in info.nodes],))}
    assert predicates == {'("t1"."amount" > 10000)', '("t1"."amount" > 5000)'}  # r2, r3 share
    for day in (2, 3):
        transfers.insert("transfers", transfer_rows(rng, day * 1000, 200, day=day))
        transfers.run()


def test_two_instances_of_a_query_enrich_one_shared_node(oracle):
    """Both sides of a self-join read one existing selection (w > 0), and each lacks
    columns of it: the second enrichment sees the first's columns (found by the sharing
    property test; it failed with a duplicate node column)."""
    oracle.create_stream("tr", {"id": "int", "k": "int", "v": "int", "w": "int"})
    oracle.insert("tr", [(i, i % 3, i % 4, i % 5 - 2) for i in range(30)])
    oracle.run()
    oracle.register("a", "SELECT k FROM tr INTERSECT SELECT v FROM tr WHERE w > 0")
    oracle.register("b", "SELECT y.v, x.id FROM tr y, tr x "
                         "WHERE y.k = x.v AND x.w > 0 AND y.w > 0")
    oracle.insert("tr", [(i, i % 3, i % 4, i % 5 - 2) for i in range(30, 60)])
    oracle.run()


def test_enriching_one_side_of_a_join_sees_a_node_it_enriched_under_the_other(oracle):
    """A 7-way self-join reused one shared join (t ⋈ t) on one side of a new join and
    under the other; enriching the other side added a column to it, and the first side's
    stale copy lacked that column (a KeyError, registration failed; a helper)."""
    oracle.create_stream("t", {"a": "int", "b": "int", "c": "int"})
    oracle.insert("t", [(i % 7, i % 5, i % 3) for i in range(30)])
    oracle.run()
    seven = "SELECT t0.a, t6.b FROM " + ", ".join(f"t AS t{i}" for i in range(7)) + " WHERE "
    oracle.register("first", seven + "t1.a = t0.a AND t2.a = t1.c AND t3.b = t2.b AND "
                    "t3.b = t4.a AND t4.c = t1.a AND t5.c = t4.a AND t6.b = t4.c AND t6.c = t3.b",
                    force=True)
    oracle.register("second", seven + "t1.b = t0.b AND t2.b = t1.c AND t3.c = t0.a AND "
                    "t4.a = t1.a AND t4.c = t5.a AND t5.b = t1.a AND t6.c = t1.c", force=True)
    oracle.insert("t", [(i % 7, i % 5, i % 3) for i in range(30, 32)])
    oracle.run()


def test_a_count_read_from_an_aggregate_moved_under_a_finer_one_counts_rows(oracle):
    """A global count(*) read a GROUP BY's row count (argus_n); a finer GROUP BY
    registered later moved that aggregate under itself, and argus_n then counted the
    finer groups: the count went up by new groups, not new rows, and registering an
    unrelated query changed an answer with no change recorded (a helper). A count(*) is
    read from the coarser node's own count(*) column, which counts rows either way."""
    oracle.create_stream("t", {"k": "int", "j": "int", "v": "int"})
    oracle.insert("t", [(0, 0, 1), (0, 0, 2), (0, 1, 3)])
    oracle.run()
    oracle.register("a", "SELECT j, count(*) AS n, max(v) AS m FROM t GROUP BY j")
    oracle.register("b", "SELECT count(*) AS n, max(v) AS m FROM t")
    oracle.register("c", "SELECT j, k, count(*) AS n, max(v) AS m FROM t GROUP BY j, k")
    oracle.register("d", "SELECT sum(v) AS s, count(*) AS n FROM t")  # (checks b again)
    for batch in ([(0, 0, 4)], [(0, 0, 5), (1, 1, 6)], [(2, 0, 7)]):
        oracle.insert("t", batch)
        oracle.run()  # (the oracle: every answer, and its changes adding up to it)


def test_implied_bounds_hold_for_nan_infinity_and_null(oracle):
    """PostgreSQL orders numeric NaN above every number and Infinity above the rest: a
    bound implied through `>=` and `=` still keeps every row of the answer."""
    oracle.create_stream("m", {"id": "int", "k": "int", "x": "numeric"})
    values = [Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity"), None,
              Decimal("2000"), Decimal("600"), Decimal("400"), Decimal("10")]
    rows = [(i, i % 3, v) for i, v in enumerate(values * 3)]
    oracle.insert("m", rows[:12])
    oracle.run()
    for name, where in [("lower", "a.x > 1000 AND b.x >= a.x * 0.5 AND c.x = b.x"),
                        ("upper", "a.x <= 1000 AND b.x <= a.x * 0.5 + 1 AND c.x = b.x")]:
        oracle.register(name, f"SELECT a.id, b.id AS b, c.id AS c FROM m a, m b, m c "
                              f"WHERE a.k = b.k AND b.k = c.k AND {where}")
    oracle.insert("m", rows[12:])
    oracle.run()


def _chain(n: int) -> str:
    return "SELECT x1.v FROM mine x1" + "".join(
        f" JOIN mine x{i} ON x{i}.v = x{i - 1}.v" for i in range(2, n + 1))


def test_matching_a_block_stops_past_its_budget_and_stays_exact(oracle, monkeypatch):
    """Matching a self-join of n copies against the network's nodes tries n! ways each
    (a registrar's 10-way self-join planned for minutes inside the cycle lock, where no
    statement_timeout reaches; a helper): past MAX_ASSIGNMENTS a block is offered no
    more nodes, and computes the rest itself, exactly."""
    from argus.mqo import blocks, sharing

    budget = blocks.Budget(2)
    assert [budget.spend() for _ in range(3)] == [True, True, False]
    found = []  # (the matches the index's search gave each registration)
    monkeypatch.setattr(sharing, "matches", lambda *args: (found.append(m) or m
                                                           for m in blocks.matches(*args)))
    oracle.create_stream("mine", {"v": "int"})
    oracle.register("j4", _chain(4))
    oracle.register("j5", _chain(5))
    assert found  # (j5's block is offered j4's joins)
    found.clear()
    monkeypatch.setattr(blocks, "MAX_ASSIGNMENTS", 0)
    oracle.register("j6", _chain(6))
    assert found == []  # (none past the budget; equal signatures are still shared)
    oracle.insert("mine", [(v % 3,) for v in range(12)])
    oracle.run()  # (the oracle: every answer equals its SQL from scratch)


@pytest.mark.parametrize("first", ["counts", "ratios"])
def test_an_aggregate_that_fails_on_a_row_isolates_no_query_that_does_not_want_it(oracle,
                                                                                  first):
    """An aggregate node by the same groups was shared by adding the other query's
    aggregates to it (horizontal expansion): a registrar's `sum(10 / (id - 5))` beside
    another role's `count(*)` failed on a row and isolated both, in either order, and
    `argus retry` of the victim failed while the other was there (a helper's attack).
    A node holding an aggregate that may fail is shared only by queries wanting it."""
    oracle.create_stream("s", {"id": "int", "v": "text"})
    queries = {"counts": "SELECT id, count(*) AS n FROM s GROUP BY id",
               "ratios": "SELECT id, count(*) AS n, sum(10 / (id - 5)) AS x FROM s GROUP BY id",
               "sums": "SELECT id, sum(id) AS total FROM s GROUP BY id"}
    for name in sorted(queries, key=lambda n: n != first):
        oracle.register(name, queries[name])
    oracle.insert("s", [(1, "x"), (2, "y")])
    oracle.run()
    oracle.insert("s", [(5, "z")])
    oracle.run()
    assert oracle.failed() == {"ratios"}
    (shared,) = oracle.db.conn.execute(  # (the two that cannot fail still share a node)
        """SELECT count(DISTINCT q.output_node) FROM argus_catalog.queries q
            WHERE q.name IN ('counts', 'sums')""").fetchone()
    assert shared == 1


@pytest.mark.parametrize("column, values", [("double precision", [1e308, 1e308]),
                                            ("interval", ["178000000 years", "178000000 years"])])
def test_a_total_that_may_overflow_isolates_no_query_that_does_not_want_it(oracle, column,
                                                                          values):
    """Of the attack above, by a second helper: the argument a plain column, the total
    overflows (1e308 + 1e308; intervals too), and the owner's `count(*)` by the same
    groups was isolated with it."""
    oracle.create_stream("m", {"k": "int", "d": column})
    oracle.register("counts", "SELECT k, count(*) AS n FROM m GROUP BY k")
    oracle.register("totals", "SELECT k, sum(d) AS total FROM m GROUP BY k")
    oracle.insert("m", [(1, v) for v in values])
    oracle.run()
    assert oracle.failed() == {"totals"}
