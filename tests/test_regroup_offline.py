"""The aggregate regrouping decisions of the multi-query optimizer (argus.mqo.regroup),
without a server: the catalog it reads is a dict (network.memory.MemoryGroups), the
network a fake that records the nodes the optimizer asks for."""

from __future__ import annotations

import itertools

from argus.nodes import Node
from argus.plan import Agg, Col
from argus.mqo.regroup import Want, aggregate
from argus.mqo.sharing import Sharing
from argus.network.memory import MemoryGroups


class Network:
    """The builder's part the optimizer calls: load nodes, make nodes, type books."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.sharing = Sharing()
        self.groups = MemoryGroups()
        self.nodes: dict[int, Node] = {}
        self.made: list[Node] = []

    def node(self, kind, parents, columns, definition, insert_only=True) -> Node:
        node_id = next(self.ids)
        node = Node(node_id, kind, 0, node_id, tuple(p.id for p in parents),
                    tuple(c.name for c in columns), tuple(c.expr for c in columns),
                    ("argus_net", f"n{node_id}"), definition, insert_only=insert_only,
                    types=tuple("bigint" for _ in columns))  # (as probe_types says)
        self.nodes[node_id] = node
        return node

    def load(self, node_id):
        return self.nodes[node_id]

    def ensure(self, kind, parents, columns, definition, insert_only):
        node = self.node(kind, parents, columns, definition, insert_only)
        self.made.append(node)
        return node

    def probe_types(self, parent, exprs):
        return ["bigint" for _ in exprs]


A, B, X = '"t1"."a"', '"t1"."b"', '"t1"."x"'


def by(*exprs):
    return tuple(Col(e.split('"')[3], e) for e in exprs)


def test_a_coarser_aggregate_is_computed_from_a_finer_ones_books():
    net = Network()
    stream = net.node("stream", [], [Col("a", ""), Col("b", ""), Col("x", "")], {"stream": "s"})
    net.groups.sizes[stream.id] = 10_000
    finer, _ = aggregate(net, stream, Want(by(A, B), (Agg("n", "count", None),
                                                      Agg("total", "sum", X)), {X: "int8"}))
    assert [n.kind for n in net.made] == ["aggregate"] and finer.parents == (stream.id,)
    net.groups.sizes[finer.id] = 40  # 40 (a, b) groups: far fewer rows than the stream

    coarse, names = aggregate(net, stream, Want(by(A), (Agg("n", "count", None),
                                                       Agg("total", "sum", X)), {X: "int8"}))
    assert coarse.parents == (finer.id,)  # regrouped, not over the stream's rows
    assert net.groups.rerolled(coarse.id) and net.groups.exprs(coarse.id) == [A]
    merged = {e[0]: e[5]["from"] for e in coarse.definition["aggregates"]}
    assert set(merged) == {"n", "total"}
    assert [column for column, _ in merged["n"].values()] == ["n"]  # its count(*)'s column
    assert all(column.startswith("argus_") for column, _ in merged["total"].values())
    assert set(names) == {"a", "n", "total"}


def test_the_same_aggregate_is_shared_and_a_distinct_one_is_not_regrouped():
    net = Network()
    stream = net.node("stream", [], [Col("a", ""), Col("x", "")], {"stream": "s"})
    net.groups.sizes[stream.id] = 10_000
    want = Want(by(A), (Agg("n", "count", None),), {})
    first, _ = aggregate(net, stream, want)
    again, names = aggregate(net, stream, want)
    assert again is first and names == {"a": "a", "n": "n"} and len(net.made) == 1
    net.groups.sizes[first.id] = 5
    # count(DISTINCT x) cannot be merged from the finer books: computed over the stream
    distinct, _ = aggregate(net, stream, Want((), (Agg("d", "count", X, True),), {X: "int8"}))
    assert distinct.parents == (stream.id,)


def test_a_larger_finer_aggregate_is_not_worth_regrouping_from():
    net = Network()
    stream = net.node("stream", [], [Col("a", ""), Col("b", ""), Col("x", "")], {"stream": "s"})
    net.groups.sizes[stream.id] = 100
    finer, _ = aggregate(net, stream, Want(by(A, B), (Agg("n", "count", None),), {}))
    net.groups.sizes[finer.id] = 100  # as many groups as rows: no saving
    coarse, _ = aggregate(net, stream, Want(by(A), (Agg("n", "count", None),), {}))
    assert coarse.parents == (stream.id,)
