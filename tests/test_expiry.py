"""Joins over sliding windows whose rows expire by themselves (argus.nodes.expiry): exact
after every cycle against the SQL from scratch, over late rows, repeated rows, NULL keys,
clock jumps that empty the windows and cycles where the clock stands still, windows of one
length and of several; and the joins that cannot expire that way (bounds of other
kinds, an input without a window, a table's deletes) keep the Rete rule on
retractions."""

from __future__ import annotations

import datetime as dt
import random

import psycopg
import pytest
from psycopg import sql

import argus
from argus.errors import PermissionDeniedError

WINDOW = "{a}.t > argus_now() - interval '10 minutes'"
QUERIES = {
    "pairs": "SELECT a.k, a.x, b.y FROM a JOIN b ON a.k = b.k "
             "WHERE {wa} AND {wb}",
    "chain": "SELECT a.k, a.x, b.y, c.z FROM a JOIN b ON a.k = b.k JOIN c ON b.y = c.y "
             "WHERE a.x < 3 AND {wa} AND {wb} AND {wc}",
    "per_z": "SELECT c.z, count(*) AS n, sum(a.x) AS sx FROM a JOIN b ON a.k = b.k "
             "JOIN c ON b.y = c.y WHERE {wa} AND {wb} AND {wc} GROUP BY c.z",
    "self": "SELECT a.k, a.x, a2.x AS x2 FROM a JOIN a a2 ON a.k = a2.k AND a2.x > a.x "
            "WHERE {wa} AND a2.t > argus_now() - interval '10 minutes'",
    "closed": "SELECT a.k, b.y FROM a JOIN b ON a.k = b.k "
              "WHERE a.t >= argus_now() - interval '5 minutes' "
              "AND b.t >= argus_now() - interval '5 minutes'",
    "two_bounds": "SELECT a.k, b.y FROM a JOIN b ON a.k = b.k "
                  "WHERE {wa} AND a.u > argus_now() - interval '10 minutes' AND {wb}",
    "outer": "SELECT ab.k, ab.y, c.z FROM (SELECT a.k, b.y FROM a JOIN b ON a.k = b.k "
             "WHERE {wa} AND {wb}) ab LEFT JOIN c ON c.y = ab.y AND c.z < 2",
    "distinct": "SELECT DISTINCT b.y FROM a JOIN b ON a.k = b.k WHERE {wa} AND {wb}",
    # windows of other lengths: each side's rows expire at their time plus its length
    "lengths": "SELECT a.k, b.y FROM a JOIN b ON a.k = b.k WHERE {wa} "
               "AND b.t > argus_now() - interval '30 minutes'",
    "lengths3": "SELECT c.z, count(*) AS n FROM a JOIN b ON a.k = b.k JOIN c ON b.y = c.y "
                "WHERE a.t > argus_now() - interval '4 minutes' AND {wb} "
                "AND c.t > argus_now() - interval '1 hour' GROUP BY c.z",
    "now": "SELECT a.k, b.y FROM a JOIN b ON a.k = b.k WHERE a.t > argus_now() AND {wb}",
    # not expiring by themselves: > against >=; an hour's start against a length; an
    # input without a window
    "open_closed": "SELECT a.k, b.y FROM a JOIN b ON a.k = b.k WHERE {wa} "
                   "AND b.t >= argus_now() - interval '10 minutes'",
    "hour": "SELECT a.k, b.y FROM a JOIN b ON a.k = b.k WHERE {wa} "
            "AND b.t > date_trunc('hour', argus_now())",
    "unbounded": "SELECT a.k, c.z FROM a JOIN c ON a.x = c.y WHERE {wa}",
}
EXPIRING = {"pairs", "chain", "per_z", "self", "closed", "two_bounds", "outer", "distinct",
            "lengths", "lengths3", "now"}


def _sql(text: str) -> str:
    return text.format(wa=WINDOW.format(a="a"), wb=WINDOW.format(a="b"),
                       wc=WINDOW.format(a="c"))


def _joins(oracle, query: str) -> list[dict]:
    """The layouts of the inner join nodes the query reads."""
    return [d for (d,) in oracle.conn.execute(
        """WITH RECURSIVE up(node) AS (
               SELECT output_node FROM argus_catalog.queries WHERE name = %s
               UNION SELECT e.parent_id FROM up JOIN argus_catalog.edges e ON e.child_id = up.node)
           SELECT n.layout FROM up JOIN argus_catalog.nodes n ON n.node_id = up.node
            WHERE n.kind = 'join' AND n.definition->>'join_type' = 'inner'""", (query,)).fetchall()]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_windowed_joins_are_exact_as_their_rows_expire(oracle, seed):
    rng = random.Random(seed)
    oracle.create_stream("a", {"k": "int", "x": "int", "t": "timestamptz",
                               "u": "timestamptz"}, time_column="t")
    oracle.create_stream("b", {"k": "int", "y": "int", "t": "timestamptz"}, time_column="t")
    oracle.create_stream("c", {"y": "int", "z": "int", "t": "timestamptz"}, time_column="t")
    clock = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)

    def at(minutes: float) -> dt.datetime:
        return clock + dt.timedelta(minutes=minutes)

    def key() -> int | None:
        return None if rng.random() < 0.05 else rng.randrange(4)

    def ages() -> float:  # minutes from the clock: mostly inside the window, some late
        return rng.choice([0, -1, -3, -8, -12, 1]) + rng.random()

    def rows(n: int) -> dict[str, list]:
        return {"a": [(key(), rng.randrange(4), at(ages()), at(ages())) for _ in range(n)],
                "b": [(key(), rng.randrange(3), at(ages())) for _ in range(n)],
                "c": [(rng.randrange(3), rng.randrange(3), at(ages())) for _ in range(n // 2)]}

    for stream, batch in rows(8).items():
        oracle.insert(stream, batch)
    oracle.run()
    for name, text in QUERIES.items():
        oracle.register(name, _sql(text))
    for name in QUERIES:
        expiring = [bool(d.get("expiry")) for d in _joins(oracle, name)]
        assert expiring and all(expiring) == (name in EXPIRING), (name, expiring)
    for _ in range(14):
        clock = at(rng.choice([0, 1, 2, 4, 7, 25]))  # still, sliding, or past every window
        for stream, batch in rows(rng.randrange(0, 9)).items():
            if batch:
                batch += batch[:rng.randrange(2)]  # the same row twice
                oracle.insert(stream, batch)
        oracle.run()  # every answer equals its SQL from scratch, and its changes add up


def test_times_within_a_window_of_the_last_instant_never_expire(oracle):
    """Windows of other lengths expire a pair at each row's time plus its window's
    length: near the last instant a timestamptz holds, the sum would overflow (the query
    was isolated: timestamp out of range; found by a helper). Such a row never expires."""
    oracle.create_stream("a", {"k": "int", "t": "timestamptz", "u": "timestamptz"},
                         time_column="t")
    oracle.create_stream("b", {"k": "int", "t": "timestamptz"}, time_column="t")
    oracle.register("lengths", "SELECT a.k FROM a JOIN b ON a.k = b.k "
                               "WHERE a.u > argus_now() - interval '1 hour' "
                               "AND b.t > argus_now() - interval '10 minutes'")
    assert all(d.get("expiry") for d in _joins(oracle, "lengths"))
    now = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)
    oracle.insert("a", [(1, now, "294276-12-31 23:30:00+00"), (2, now, "infinity"),
                        (3, now, now)])
    oracle.insert("b", [(1, now), (2, now), (3, now)])
    assert not oracle.run().failed  # (the oracle: equal to the SQL from scratch)
    later = now + dt.timedelta(minutes=70)  # a's row 3 has left its hour, row 1 never will
    oracle.insert("b", [(1, later), (3, later)])
    oracle.run()
    assert sorted(oracle.db.results("lengths")) == [(1,)]


def test_a_window_over_a_table_joins_by_the_rete_rule(oracle):
    """A table's deletes retract rows that are inside the window: its window is not one
    whose rows only leave by expiring."""
    oracle.create_stream("a", {"k": "int", "t": "timestamptz"}, time_column="t")
    oracle.create_table("b", {"k": "int", "t": "timestamptz"}, primary_key=["k"])
    oracle.register("pairs", "SELECT a.k FROM a JOIN b ON a.k = b.k "
                             "WHERE a.t > argus_now() - interval '10 minutes' "
                             "AND b.t > argus_now() - interval '10 minutes'")
    assert not any(d.get("expiry") for d in _joins(oracle, "pairs"))
    now = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)
    oracle.insert("a", [(1, now), (2, now)])
    oracle.insert("b", [(1, now), (2, now)])
    oracle.run()
    oracle.delete("b", [(1,)])
    oracle.run()
    assert sorted(oracle.db.results("pairs")) == [(2,)]


def test_a_registrar_joins_windows_of_streams_it_may_read_only(network, login, worker):
    """A role with the registrar's rights and one stream to read: its join of that
    stream's windows expires by itself and is exact; a window of a stream it may not
    read is refused by name, whatever the join around it."""
    now = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)
    for name in ("w", "hidden"):
        network.create_stream(name, {"k": "int", "t": "timestamptz"}, time_column="t")
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="w")
    pairs = ("SELECT a.k, b.t FROM w a JOIN w b ON a.k = b.k AND b.t > a.t "
             "WHERE a.t > argus_now() - interval '10 minutes' "
             "AND b.t > argus_now() - interval '10 minutes'")
    with argus.connect(dsn) as registrar:
        registrar.register_query("pairs", pairs)
        with pytest.raises(PermissionDeniedError, match="may not read stream 'hidden'"):
            registrar.register_query("spy", pairs.replace("JOIN w b", "JOIN hidden b"))
    network.insert("w", [(1, now - dt.timedelta(minutes=12)), (1, now - dt.timedelta(minutes=5)),
                         (1, now), (2, now)])
    network.run()
    (layout,) = [d for (d,) in network.conn.execute(
        "SELECT layout FROM argus_catalog.nodes WHERE kind = 'join'").fetchall()]
    assert layout["expiry"]
    assert sorted(network.results("pairs")) == [(1, now)]  # the 12-minute-old row is out


def test_a_join_most_of_whose_rows_leave_each_cycle_finds_them_by_a_scan(oracle):
    """argus.expiry_upkeep: while a quarter of the join's rows leave at every cycle, its
    expiry index (each new row's ~2 us) goes and the rows that leave are found by a scan;
    when the clock slows to a sliver of the window a cycle, the index comes back. The
    answer is exact at every cycle either way (the oracle), over NULL keys and times,
    late rows and rows of 1900 among the others (-infinity is refused at loading)."""
    rng = random.Random(5)
    OLD = dt.datetime(1900, 1, 1, tzinfo=dt.timezone.utc)
    for name, column in (("a", "x"), ("b", "y")):
        oracle.create_stream(name, {"k": "int", column: "int", "t": "timestamptz"},
                             time_column="t")
    oracle.register("pairs", _sql(QUERIES["pairs"]))
    (join,) = [n for (n,) in oracle.conn.execute(
        "SELECT node_id FROM argus_catalog.nodes WHERE kind = 'join'").fetchall()]
    clock = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)

    def cycle(step: dt.timedelta, n: int) -> None:
        nonlocal clock
        clock += step
        for stream in ("a", "b"):
            oracle.insert(stream, [(rng.randrange(200), rng.randrange(9),
                                    clock - rng.random() * step) for _ in range(n)]
                          + [(None, 1, clock), (3, 1, None), (4, 2, OLD),
                             (5, 3, clock - dt.timedelta(minutes=rng.choice([9, 15])))])
        oracle.run()

    def found_by() -> tuple[str, bool]:
        return oracle.conn.execute(
            "SELECT n.expired_by, EXISTS (SELECT FROM pg_indexes i WHERE i.schemaname = "
            "h.hist_schema AND i.tablename = h.hist_name AND i.indexdef LIKE '%%(argus_expiry)')"
            " FROM argus.nodes n JOIN argus_catalog.nodes h USING (node_id) WHERE n.node_id = %s",
            (join,)).fetchone()

    assert found_by() == ("index", True)
    for _ in range(16):  # 2.5 minutes a cycle of a 10-minute window
        cycle(dt.timedelta(minutes=2.5), 500)
    assert found_by() == ("scan", False)
    for _ in range(16):  # 5 seconds a cycle
        cycle(dt.timedelta(seconds=5), 20)
    assert found_by() == ("index", True)


def test_an_expiry_index_a_reader_holds_is_dropped_at_a_later_check(oracle):
    """argus.expiry_upkeep waits 50 ms at most for a reader of the history: the cycle
    that cannot drop the index runs on with it (the lock_timeout undone), and a check
    after the reader has gone drops it."""
    rng = random.Random(6)
    for name in ("a", "b"):
        oracle.create_stream(name, {"k": "int", "x": "int", "t": "timestamptz"},
                             time_column="t")
    oracle.register("pairs", "SELECT a.k, a.x, b.x AS y FROM a JOIN b ON a.k = b.k WHERE "
                             f"{WINDOW.format(a='a')} AND {WINDOW.format(a='b')}")
    (join, schema, table) = oracle.conn.execute(
        "SELECT node_id, hist_schema, hist_name FROM argus_catalog.nodes "
        "WHERE kind = 'join'").fetchone()
    clock = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)

    def cycles(until_run: int) -> None:
        nonlocal clock
        while True:
            clock += dt.timedelta(minutes=2.5)
            for stream in ("a", "b"):
                oracle.insert(stream, [(rng.randrange(200), 1, clock) for _ in range(500)])
            report = oracle.run()
            assert not report.failed
            if report.run_id >= until_run:
                return

    def found_by() -> str:
        return oracle.conn.execute("SELECT expired_by FROM argus.nodes WHERE node_id = %s",
                                   (join,)).fetchone()[0]

    with psycopg.connect(oracle.db.dsn) as reader:
        reader.execute(sql.SQL("SELECT count(*) FROM {}").format(
            sql.Identifier(schema, table)))  # holds it
        cycles(until_run=16)
        assert found_by() == "index"
        assert oracle.conn.execute("SHOW lock_timeout").fetchone()[0] == "0"
    cycles(until_run=24)
    assert found_by() == "scan"
