"""The shared network as the catalog records it: load it, add nodes, drop unused ones.

A plan is mapped to nodes bottom-up; a node whose canonical signature already exists is
reused, so equal subplans of different queries share one node and its tables.
"""

from __future__ import annotations

import dataclasses

import psycopg

from ..errors import UnknownStreamError
from ..frontend.constants import Constants
from ..mqo import index
from ..mqo.replan import Replan
from ..mqo.sharing import IndexEntry, Sharing
from ..nodes import KINDS, Node, signature
from ..nodes import expiry, rerun
from ..nodes.lazy import is_lazy
from ..nodes.join import deferred
from ..plan import Col, Plan
from . import horizons, jisc, records
from .apply import Apply, NewNode
from .layouts import Layouts
from .mapping import Mapping
from .reshape import Reshape, growing
from . import setops
from .groups import CatalogGroups
from .indexes import IndexRequests
from .reads import Reads, load_node
from .stored import store_blocks


class Builder(Mapping, Reads, Apply, Layouts, Reshape, IndexRequests):
    """Maps plans to nodes inside the registration's transaction.

    Selections and inner joins are covered through the computation index
    (`argus.mqo.sharing`); every other plan node is shared when an equal node (same kind,
    parents, columns and definition: its signature) exists. Shared nodes name their
    columns their own way, so each plan's columns are mapped to its node's (`names`),
    and SQL over a plan's inputs is renamed before it becomes a node's.

    Its parts map plans (network.mapping, network.setops), decide what a new node is
    (ensure, _decide), read the network (network.reads), make a decided node
    (network.apply), lay nodes out (network.layouts) and change them in place
    (network.reshape)."""

    def __init__(self, conn: psycopg.Connection, sharing: Sharing | None = None,
                 query: str = "") -> None:
        super().__init__(conn)
        self.sharing = sharing or Sharing()
        self.query = query  # the query of the nodes that must not be shared
        self.created: list[Node] = []
        self.names: dict[Plan, dict[str, str]] = {}  # plan column -> node column
        self._memo: dict[Plan, Node] = {}
        self.compiled: set[int] = set()  # nodes whose code this registration (re)compiled
        self.constants = Constants(conn)
        self.groups = CatalogGroups(conn, self.counted, query)
        self.join_orders: list[dict] = []  # each block's tree by cost, and alternatives
        self.replan: Replan | None = None  # a registered query planned again (argus.adapt)
        self.lazy = False  # build new inner joins lazily (a JISC migration: network.jisc)
        self.pending_lazy: set[int] = set()  # the lazy joins built, until jisc.settle
        self.enriched: set[int] = set()  # nodes given columns (network.reshape.enrich)
        self.taken: set[int] = set()  # old answers whose tables new nodes took over

    def own_nodes(self) -> frozenset[int]:
        return frozenset() if self.replan is None else self.replan.hidden

    def time_columns(self, source: Node) -> frozenset[str]:
        return self._once(("finite", source.id), lambda: frozenset(
            r[0] for r in self.conn.execute(
                "SELECT time_column FROM argus_catalog.streams WHERE node_id = %s "
                "AND time_column IS NOT NULL", (source.id,))))

    def ancestors(self, node_id: int) -> list[tuple[int, str]]:
        """The node and every node it is computed from, in evaluation order: (id, kind)."""
        return self.conn.execute(
            """WITH RECURSIVE a(id) AS (SELECT %s::bigint UNION
                   SELECT e.parent_id FROM argus_catalog.edges e JOIN a ON e.child_id = a.id)
               SELECT a.id, n.kind FROM a JOIN argus_catalog.nodes n ON n.node_id = a.id
                ORDER BY n.join_level, n.sequence_id, n.node_id""", (node_id,)).fetchall()

    def make_rerun(self, canonical: str, streams, width: int) -> Node:
        """A query evaluated by re-running it (argus.nodes.rerun): its answer's columns
        c1 … c<width>, by position. It reads its streams' whole histories."""
        parents = [self._stream_node(s) for s in sorted(set(streams))]
        for parent in parents:
            self.check_horizon(parent, None)
        text = rerun.query_text(canonical, [p.hist_ref[1] for p in parents])
        columns = tuple(Col(f"c{i}", f"c{i}") for i in range(1, width + 1))
        return self.ensure("rerun", parents, columns, {"sql": text}, False, layout=self._bound())

    def make_select(self, parent: Node, predicate: str | None, columns: list[Col],
                    entry: IndexEntry) -> Node:
        self.check_horizon(parent, None)
        return self.ensure("select", [parent], tuple(columns), {"predicate": predicate},
                            parent.insert_only, entry)

    def make_join(self, left: Node, right: Node, condition: str, columns: list[Col],
                  entry: IndexEntry, copy: tuple[int, dict[str, str]] | None = None,
                  table: bool = False) -> Node:
        self.check_horizon(left, None)
        self.check_horizon(right, None)
        node = self.ensure("join", [left, right], tuple(columns),
                            {"join_type": "inner", "condition": condition},
                            left.insert_only and right.insert_only, entry,
                            private=not self.sharing.join_sharing, copy=copy, table=table)
        self._index_join_keys(node, left, right)
        return node

    def check_horizon(self, parent: Node, bounds) -> None:
        horizons.check(self.conn, parent, bounds)

    def _stream_node(self, stream: str) -> Node:
        row = self.conn.execute("SELECT node_id FROM argus_catalog.streams WHERE name = %s",
                                (stream,)).fetchone()
        if row is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        return load_node(self.conn, row[0])

    def ensure(self, kind: str, parents: list[Node], columns, definition: dict,
                insert_only: bool, entry: IndexEntry | None = None,
                private: bool = False, copy: tuple[int, dict[str, str]] | None = None,
                table: bool = False, layout: dict | None = None) -> Node:
        """The node computing `columns` of `parents` as `definition` says: an equal one
        (by signature), else a new one, decided (NewNode: kept as `layout` and as
        decided) and then made (`table`: a join a re-plan priced as a table is no view
        by its growth)."""
        names = tuple(c.name for c in columns)
        exprs = tuple(c.expr for c in columns)
        of, layout = KINDS[kind], dict(layout or {})
        if of.selects and self.views_kept_rows(parents, definition, exprs):
            layout["virtual"] = True
        if of.groups:
            layout |= growing(definition, parents[0])
        private_to = self._private_to(private)
        signature_text = signature(kind, parents, names, exprs, definition)
        found = self._signed(signature_text, private_to) or self._lazy(signature_text,
                                                                       private_to)
        # the same node, isolated since a failure or made earlier by this registration,
        # is not offered: a node made beside it is found instead from now on
        if found and found[1]:
            records.hide(self.conn, found[0])
            found = None
        if found:
            node = self.load(found[0])
            if entry is not None and self._block(node.id) is None:
                self._record(node, parents, entry)
            return node
        new = self._decide(NewNode(kind, tuple(self._readied(kind, parents, definition)),
                                   names, exprs, definition, layout, insert_only,
                                   signature_text, private_to, copy=copy), table)
        return self.create(new, entry)

    def _signed(self, signature_text: str, private_to: str | None) -> tuple[int, bool] | None:
        """The node found by this signature: (node, isolated since a failure)."""
        return self.conn.execute(
            "SELECT node_id, node_id IN (SELECT node_id FROM argus.excluded_nodes()) "
            "FROM argus_catalog.nodes WHERE md5(signature) = md5(%s) AND findable "
            "AND coalesce(private_to, '') = coalesce(%s, '')",
            (signature_text, private_to)).fetchone()

    def _lazy(self, signature_text: str, private_to: str | None) -> tuple[int, bool] | None:
        """The join built lazily as this signature's (findable by it once whole): this
        query's own, planned again, or this build's (a set operation's two branches over
        one join) as it is; any other query's made whole first, as for a second reader
        (found by a helper: a second query's migration built it again, and failed on the
        node's duplicate signature). (node, isolated since a failure), as ensure's."""
        found = self.conn.execute(
            "SELECT node_id, node_id IN (SELECT node_id FROM argus.excluded_nodes()) "
            "FROM argus_catalog.nodes WHERE layout ? 'lazy' AND md5(signature) = md5(%s) "
            "AND coalesce(private_to, '') = coalesce(%s, '') ORDER BY node_id DESC",
            (signature_text, private_to)).fetchone()
        if found and not found[1] and found[0] not in self.own_nodes() | self.pending_lazy:
            jisc.finish(self.conn, [found[0]])
            self.forget()
        return found

    def _readied(self, kind: str, parents: list[Node], definition: dict) -> list[Node]:
        """The parents as a new node can read them: on the coordinator for an outer,
        semi or anti join (Citus), computed by the cycles if deferred, completed if
        built lazily."""
        if KINDS[kind].joins and definition.get("join_type") != "inner":  # (one node may
            unsharded = {i: self._unsharded(p)  # be both parents)
                         for i, p in {p.id: p for p in parents}.items()}
            parents = [unsharded[p.id] for p in parents]
        undeferred = {}  # (once per node: one node may be both parents)
        for p in parents:
            if deferred(p) and p.id not in undeferred:
                undeferred[p.id] = self.undefer(p)
        parents = [undeferred.get(p.id, p) for p in parents]
        if any(is_lazy(p) and p.id not in self.pending_lazy for p in parents):
            jisc.finish(self.conn, [p.id for p in parents if is_lazy(p)])  # (a second reader)
            self.forget()
            parents = [self.load(p.id) for p in parents]
        return parents

    def _decide(self, new: NewNode, table: bool = False) -> NewNode:
        """How a new node keeps its rows and is filled (nothing written yet): built
        lazily (a JISC migration's inner join), a view at once or past a limit (a
        join large next to its inputs), a view of a stream (a selection passing most of
        it), a copy of a migrated node's rows, or filled from its parents."""
        of, definition, parents = KINDS[new.kind], new.definition, list(new.parents)
        layout = new.layout
        copy = None if new.copy is not None and new.copy[0] in self.taken else new.copy
        lazily = (self.lazy and of.joins and new.insert_only and copy is None
                  and definition.get("join_type") == "inner")
        limit = None  # an inner join's rows past which it is a view (_view_of_join)
        if of.joins and new.insert_only and not any(map(is_lazy, parents)):
            limit = self._view_of_join(parents, definition, new.names, new.exprs,
                                       growth=not table)
        view_now = lazily and limit is not None and self._estimated_rows(
            parents, definition) >= limit  # (a lazy join's view: nothing to fill, complete)
        lazily = lazily and not view_now
        if lazily:  # (not findable: another query must not read it)
            limit = None
            layout = {**layout, "lazy": {}}
        if of.selects and self.view_of_stream(parents[0], definition, layout, new.exprs):
            layout = {**layout, "virtual": True}
        if (of.joins and definition.get("join_type") == "inner" and not new.insert_only
                and (found := expiry.of_inputs(parents, self.load))):
            layout = {**layout, "expiry": list(found)}  # (nodes/expiry)
        fill = "lazily" if lazily else "view" if view_now else "copy" if (
            copy is not None and new.insert_only) else "parents"
        return dataclasses.replace(new, layout=layout, findable=not lazily, fill=fill,
                                   limit=limit, copy=copy)

    def unions_within(self, keys: list[str]) -> list[tuple[int, list[str]]]:
        return self.counted(lambda: setops.unions_within(self.conn, keys),
                            lambda found: [n for n, _ in found])

    def record_union(self, node_id: int, op: str, operands: list[str]) -> None:
        setops.record_union(self.conn, node_id, op, operands)

    def _record(self, node: Node, parents: list[Node], entry: IndexEntry) -> None:
        index.record_block(self.conn, node.id, entry.sources, entry.predset, entry.dpredset,
                           entry.atoms, [p.id for p in parents])
        self.forget()
        self._candidates.clear()

    def _store(self, node: Node, parents: list[Node]) -> None:
        store_blocks(self.conn, node, parents, code=not self.predicting)
        self.compiled.add(node.id)
