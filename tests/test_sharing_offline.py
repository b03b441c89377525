"""Sharing planned without a server (issue 55): the cases of tests/fixtures/sharing.txt,
their queries read by the frontend and mapped to nodes (network.mapping, the
multi-query optimizer's blocks and regrouping) over a network in memory
(network.memory), give the nodes the same cases give on a server (tests/test_sharing.py).
Their rows are a model's (the server's rows as a sample), not PostgreSQL's estimates;
families of other queries are planned in memory over the server's own numbers, so that
what is compared is how the two plan and describe nodes, not two estimators."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import random

import psycopg
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

import argus
from argus import admission

from argus.frontend.analyze import StreamSchema, analyze
from argus.frontend.canon import column_atom, predset_text
from argus.mqo.blocks import render
from argus.mqo.sharing import Sharing
from argus.network.memory import MemoryNetwork
from argus.network.reads import Reads
from argus.network.stored import load_node
from argus.trees import DIALECT

from .conftest import _create_database, _drop_database
from .fixtures import cases
from .test_property_sharing import C, QUERIES
from .test_sharing import RESERVED, shapes, transfer_rows

COLUMNS = {"tran_id": "bigint", "tran_date": "date", "sender": "text", "receiver": "text",
           "amount": "numeric(14,2)"}
SCHEMAS = {"transfers": StreamSchema("transfers", tuple(COLUMNS.items()), "tran_date")}


def queries(case: dict) -> dict[str, str]:
    return {k: v for k, v in case.items() if k not in RESERVED and not k.startswith("nodes")}


SAMPLE = [dict(zip(COLUMNS, (i, dt.date.fromisoformat(day), s, r, amount)))
          for i, day, s, r, amount in transfer_rows(random.Random(7), 0, 300)]  # (setup's)


def planned(case: dict) -> dict[str, str]:
    """Each query's nodes besides the stream, as kind@query-that-made-it."""
    net = MemoryNetwork(Sharing.of(case.get("sharing")), case.get("layout", "cost"),
                        samples={"transfers": SAMPLE})
    stream = net.add_stream("transfers", COLUMNS, rows=len(SAMPLE), time_column="tran_date")
    return offline_shapes(net, stream, queries(case), SCHEMAS)


def offline_shapes(net: MemoryNetwork, stream, family: dict[str, str], schemas
                   ) -> dict[str, str]:
    """Each query planned in turn, then its nodes besides the stream, as
    tests/test_sharing.shapes gives them (once all are planned: a node may move)."""
    tops = {name: net.plan(name, analyze(text, schemas).plan.input)
            for name, text in family.items()}
    return {name: " ".join(f"{kind}@{net.created_by[n]}"
                           for n, kind in net.ancestors(top.id) if n != stream.id)
            for name, top in tops.items()}


@pytest.mark.parametrize("case", cases("sharing.txt"), ids=lambda c: c["title"])
def test_sharing_planned_without_a_server(case):
    expected = {k.split()[1]: v for k, v in case.items() if k.startswith("nodes ")}
    assert planned(case) == expected


FAMILY_COLUMNS = {"id": "integer", "k": "integer", "v": "integer", "w": "integer", "t": "text"}
FAMILY_ROWS = st.lists(st.tuples(st.integers(0, 1000), st.one_of(st.none(), C), C, C,
                                 st.sampled_from([None, "a", "b"])), min_size=50, max_size=200)


class ServerModel:
    """The rows a server's registrations read, for the network in memory: PostgreSQL's
    estimates (network.reads, as the Builder asks them), the rates its cycles observed
    and its nodes' counts. Planned over the same numbers, the two networks can differ
    only in how they plan (the row model's own numbers are another estimator's: close
    costs then go either way, as a family CI drew did)."""

    def __init__(self, conn) -> None:
        self.conn, self.reads = conn, Reads(conn)
        self.streams = dict(conn.execute("SELECT definition->>'stream', node_id "
                                         "FROM argus_catalog.nodes WHERE kind = 'stream'"))
        self.checked: set[int] = set()  # nodes found the server's

    def _server(self, net: MemoryNetwork, node_id: int) -> int:
        """The server's node of a node in memory: a stream's by name, any other's the
        one of its number (planned alike so far, both numbered their nodes alike)."""
        node = net.nodes[node_id]
        if node.kind == "stream":
            return self.streams[node.hist_ref[1]]
        if node_id in self.checked:
            return node_id
        parents = [self._server(net, p) for p in node.parents]
        assert self.conn.execute(
            "SELECT kind = %s AND %s::bigint[] = ARRAY(SELECT parent_id FROM argus_catalog.edges "
            "WHERE child_id = node_id ORDER BY position) FROM argus_catalog.nodes "
            "WHERE node_id = %s", (node.kind, parents, node_id)).fetchone() == (True,), \
            f"node {node_id} ({node.kind}) is not the server's"
        self.checked.add(node_id)
        return node_id

    def estimate(self, net, source_id: int, instance: int, conds) -> float:
        return self.reads.estimate(self._server(net, source_id), instance, conds)

    def joined(self, net, block, linked, conds) -> float:
        sources = tuple(self._server(net, s) for s in block.sources)
        return self.reads._joined(dataclasses.replace(block, sources=sources), linked, conds)

    def inflow(self, net, source_id: int, rows: float) -> float:
        return self.reads.inflow(self._server(net, source_id), rows)

    def share_of(self, net, parent, predicate, base, rows) -> float:
        return self.reads.share_of(self.reads.load(self._server(net, parent.id)), predicate,
                                   self.reads.load(self._server(net, base.id)))

    def counted(self, net, sources: tuple[int, ...], predset) -> float:
        nodes = [self.reads.load(self._server(net, s)) for s in sources]
        where = {column_atom(i, c): (f"t{i}", c)
                 for i, node in enumerate(nodes, 1) for c in node.columns}
        condition = render(sqlglot.parse_one(predset_text(predset) or "TRUE", read=DIALECT),
                           where)
        return self.conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(
            sql.SQL(", ").join(sql.SQL("{} AS {}").format(n.hist, sql.Identifier(f"t{i}"))
                               for i, n in enumerate(nodes, 1)),
            sql.SQL(condition))).fetchone()[0]


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(family=st.lists(QUERIES, min_size=2, max_size=6),
       strategy=st.sampled_from(["selection", "match-plan", "none"]), rows=FAMILY_ROWS)
def test_random_families_planned_alike_with_and_without_a_server(admin_dsn, template_db,
                                                                family, strategy, rows):
    """Families of overlapping queries (test_property_sharing's: thresholds, alias
    orders, bands, groupings, set operations) registered on a server and planned in
    memory over the server's numbers give the same nodes, each described alike: what
    it computes, its columns' types and how it keeps its rows."""
    planned_alike(admin_dsn, template_db, family, strategy, rows, FAMILY_COLUMNS)


TIMED_COLUMNS = {**FAMILY_COLUMNS, "at": "timestamp with time zone"}
_AT = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
TIMED_ROWS = [(i, r.choice([None, 1, 2]), r.randint(0, 5), r.randint(-2, 3),
               r.choice([None, "a", "b"]), _AT + dt.timedelta(hours=i))
              for r in [random.Random(3)] for i in range(150)]


@pytest.mark.parametrize("family", [
    ["SELECT a.id, b.v FROM tr a LEFT JOIN tr b ON b.k = a.v AND b.w > 0",
     "SELECT a.id, b.v FROM tr a LEFT JOIN tr b ON b.k = a.v AND b.w > 1",
     "SELECT a.id FROM tr a FULL JOIN tr b ON a.k = b.v"],
    ["SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY w DESC, id) AS r FROM tr",
     "SELECT * FROM (SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY w DESC, id) "
     "AS r FROM tr) s WHERE r <= 3",
     "SELECT id, sum(w) OVER (PARTITION BY k ORDER BY id) AS s FROM tr WHERE v > 0"],
    ["SELECT id FROM tr WHERE at > argus_now() - interval '1 day'",
     "SELECT k, count(*) FROM tr WHERE at > argus_now() - interval '1 day' GROUP BY k",
     "SELECT id FROM tr WHERE at > argus_now() - interval '2 days' AND v > 0"],
    ["WITH RECURSIVE r(a, b) AS (SELECT k, v FROM tr UNION SELECT r.a, t.v FROM r "
     "JOIN tr t ON t.k = r.b) SELECT * FROM r", "SELECT k, v FROM tr WHERE w > 0"],
    ["SELECT DISTINCT k FROM tr", "SELECT id FROM tr a WHERE EXISTS "
     "(SELECT 1 FROM tr b WHERE b.k = a.v)", "SELECT id FROM tr a WHERE a.v NOT IN "
     "(SELECT k FROM tr WHERE k IS NOT NULL)", "SELECT k, w FROM tr ORDER BY w DESC, k LIMIT 5"],
    ["SELECT t FROM tr UNION SELECT CAST(id AS text) FROM tr",
     "SELECT id FROM tr WHERE abs(w) > 1", "SELECT id, v FROM tr WHERE abs(w) > 1 AND v > 0"],
], ids=["outer joins", "windows", "the clock", "recursion", "distinct, semi, anti, top-k",
        "a union of texts, conditions over expressions"])
def test_families_of_other_shapes_planned_alike(admin_dsn, template_db, family):
    """Outer joins, windows and Top-K, the clock's selections, recursion, semi and anti
    joins: planned in memory as on a server (a stream with a time column)."""
    planned_alike(admin_dsn, template_db, family, "selection", TIMED_ROWS, TIMED_COLUMNS,
                  time_column="at")


def planned_alike(admin_dsn: str, template_db: str, family: list[str], strategy: str,
                  rows: list[tuple], columns: dict[str, str], time_column: str | None = None
                  ) -> None:
    """The family registered on a server, then planned in memory over the server's
    numbers: the same nodes, each described alike."""
    family = dict(zip((f"q{i}" for i in itertools.count()), family))
    schemas = {"tr": StreamSchema("tr", tuple(columns.items()), time_column)}
    creators = {}
    dsn = _create_database(admin_dsn, "argus_offline_family", template=template_db)
    try:
        with argus.connect(dsn, sharing=strategy) as db:
            db.create_stream("tr", columns, time_column=time_column)
            db.insert("tr", rows)
            db.run()
            for name, text in family.items():
                made = db.register_query(name, text).nodes
                creators |= {n.id: name for n in made if n.created}
            online = shapes(db, creators)
        with psycopg.connect(dsn, autocommit=True) as conn:
            net = MemoryNetwork(Sharing.of(strategy), model=ServerModel(conn), samples={
                "tr": [dict(zip(columns, r)) for r in rows]})
            net.row_bound = admission.row_bound(conn)
            stream = net.add_stream("tr", columns, rows=len(rows), time_column=time_column)
            offline = offline_shapes(net, stream, family, schemas)
            assert offline == online, family
            kept = {n: described(load_node(conn, n)) for n in net.nodes}
    finally:
        _drop_database(admin_dsn, "argus_offline_family")
    assert {n: described(node) for n, node in net.nodes.items()} == kept, family


def described(node) -> tuple:
    """What a node computes and how it keeps its rows, as planning decides them: not
    its indexes (the catalog's network's), nor whether a query's output join is deferred
    (decided once the query is built: Layouts.defer)."""
    layout = {k: v for k, v in node.layout.items() if k not in ("indexes", "deferred")}
    return (node.kind, node.parents, node.columns, node.exprs, node.definition, layout,
            node.types, node.insert_only)


def test_the_row_model_reads_what_python_cannot_order_as_unknown():
    """A sample's NULL fails a comparison, as in SQL; NaN, ±Infinity, a text compared
    as a number and a condition over an expression are not read here (None: the model's
    default share), and a sample of them is not read at all. A column's name may hold
    a quote."""
    from fractions import Fraction

    from argus.frontend.canon import Literal
    from argus.network.row_model import holds, sampled

    above = Literal((('"i1"."w"', Fraction(1)),), ">", ("num", "3"))
    assert [holds(above, {1: {"w": v}}) for v in (5, 2, None)] == [True, False, False]
    for value in (float("nan"), float("inf"), -float("inf"), "x"):
        assert holds(above, {1: {"w": value}}) is None
    assert sampled([frozenset({above})], {1: [{"w": 5}, {"w": float("inf")}]}) is None
    opaque = Literal((('abs("i1"."w")', Fraction(1)),), ">", ("num", "1"))  # (not read)
    assert holds(opaque, {1: {"w": 5}}) is None
    quoted = Literal((('"i1"."a""b"', Fraction(1)),), ">", ("num", "3"))  # (a "" in a name)
    assert holds(quoted, {1: {'a"b': 5}}) is True
