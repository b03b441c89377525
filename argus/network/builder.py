"""The shared network as the catalog records it: load it, add nodes, drop unused ones.

A plan is mapped to nodes bottom-up; a node whose canonical signature already exists is
reused, so equal subplans of different queries share one node and its tables.
"""

from __future__ import annotations

import dataclasses
import itertools

import psycopg
import sqlglot
from psycopg import sql
from sqlglot import exp

from ..aggregates import fixed_scale
from ..errors import UnknownStreamError, UnsupportedQueryError
from ..frontend.constants import Constants
from ..frontend.lateral import expands
from ..frontend.grouping import HOLISTIC
from ..frontend.temporal import classify, clock_conjuncts
from ..mqo import index, regroup
from ..mqo.blocks import describe, is_spj, substitute
from ..mqo.replan import Replan
from ..mqo.sharing import BlockBuilder, IndexEntry, Sharing
from ..nodes import KINDS, Node, signature
from ..nodes import expiry, rerun
from ..nodes.lazy import is_lazy
from ..nodes.window import reads_parent_partitions, suffix as window_suffix, top_order
from ..nodes.join import deferred
from ..plan import (Aggregate, Col, Distinct, Join, Plan, Recursive, Scan, Select, SetOp,
                    Window)
from ..trees import DIALECT
from . import horizons, jisc
from .apply import Apply, NewNode
from .layouts import Layouts
from .reshape import Reshape, growing
from .setops import SetOps
from .groups import CatalogGroups
from .indexes import IndexRequests
from .reads import Reads, load_node
from .stored import store_blocks


def _category(pg_type: str) -> str:
    """How an aggregate keeps the sums of an argument of this type (argus.aggregates)."""
    return {"smallint": "int", "integer": "int", "bigint": "int8", "numeric": "numeric",
            "real": "float4", "double precision": "float8"}.get(pg_type, "other")


class Builder(Reads, Apply, Layouts, Reshape, SetOps, IndexRequests):
    """Maps plans to nodes inside the registration's transaction.

    Selections and inner joins are covered through the computation index
    (`argus.mqo.sharing`); every other plan node is shared when an equal node (same kind,
    parents, columns and definition: its signature) exists. Shared nodes name their
    columns their own way, so each plan's columns are mapped to its node's (`names`),
    and SQL over a plan's inputs is renamed before it becomes a node's.

    This class maps plans and decides what a new node is (ensure, _decide); its parts
    read the network (network.reads), make a decided node (network.apply), lay nodes
    out (network.layouts), change them in place (network.reshape) and map set
    operations (network.setops)."""

    def __init__(self, conn: psycopg.Connection, sharing: Sharing | None = None,
                 query: str = "") -> None:
        super().__init__(conn)
        self.sharing = sharing or Sharing()
        self.query = query  # the scope of the nodes that must not be shared (_scope)
        self.created: list[Node] = []
        self.names: dict[Plan, dict[str, str]] = {}  # plan column -> node column
        self._memo: dict[Plan, Node] = {}
        self.compiled: set[int] = set()  # nodes whose code this registration (re)compiled
        self.constants = Constants(conn)
        self.groups = CatalogGroups(conn, self.counted)
        self.join_orders: list[dict] = []  # each block's tree by cost, and alternatives
        self.replan: Replan | None = None  # a registered query planned again (argus.adapt)
        self.lazy = False  # build new inner joins lazily (a JISC migration: network.jisc)
        self.pending_lazy: set[int] = set()  # the lazy joins built, until jisc.settle
        self.enriched: set[int] = set()  # nodes given columns (network.reshape.enrich)
        self.taken: set[int] = set()  # old answers whose tables new nodes took over
        # the rows a recursion, a set-returning function of the data or a re-run may give
        # in a statement (nodes.base.bounded): max_query_state at the answer's width
        self.row_bound: int | None = None

    def own_nodes(self) -> frozenset[int]:
        return frozenset() if self.replan is None else self.replan.hidden

    def node_for(self, plan: Plan) -> Node:
        if plan in self._memo:
            return self._memo[plan]
        node = self._node_for(plan)
        self._memo[plan] = node
        return node

    def _node_for(self, plan: Plan) -> Node:
        """The plan's node, by its shape: one method each (the first that applies)."""
        for applies, make in (
                (lambda p: isinstance(p, Scan), self._scan),
                (is_spj, self._spj),
                (lambda p: isinstance(p, Select) and any(expands(c.expr) for c in p.columns),
                 self._expanding),
                (lambda p: isinstance(p, Select), self._temporal),
                (lambda p: isinstance(p, Join), self._outer_join),
                (lambda p: isinstance(p, Aggregate)
                 and any(a.func == HOLISTIC for a in p.aggregates), self._recomputed_groups),
                (lambda p: isinstance(p, Aggregate), self._aggregate),
                (lambda p: isinstance(p, Distinct), self._distinct),
                (lambda p: isinstance(p, Window), self._windowed),
                (lambda p: isinstance(p, Recursive), self._recursive),
                (lambda p: isinstance(p, SetOp), self._set_operation)):
            if applies(plan):
                return make(plan)
        raise TypeError(f"no node kind for {type(plan).__name__}")  # pragma: no cover

    def _scan(self, plan: Scan) -> Node:
        self.names[plan] = {c: c for c in plan.columns}
        return self._stream_node(plan.stream)

    def _spj(self, plan: Plan) -> Node:
        """Selections and inner joins, covered through the computation index
        (mqo.sharing) in the order the cost model chose."""
        def block_of():
            return describe(plan, self._source, canonical=self.sharing.canonicalize,
                            infer=self.sharing.infer_bounds, resolve=self.constants)

        block = block_of()
        if self.constants.fetch():  # constants PostgreSQL had to read: again, with them
            block = block_of()
        blocks = BlockBuilder(self, block)
        node, self.names[plan] = blocks.build()
        if blocks.chosen is not None and len(block.sources) > 1:
            self.join_orders.append(self._order_record(block, *blocks.chosen))
        if self.replan is not None:
            self.replan.name_last(tuple(self._instance_name(block, i)
                                        for i in range(1, len(block.sources) + 1)))
        return node

    def _expanding(self, plan: Select) -> Node:
        """A set-returning function's rows (frontend.lateral): shared by signature only."""
        parent = self.node_for(plan.input)
        self.check_horizon(parent, None)
        columns = tuple(Col(c.name, self.renamed(c.expr, t1=plan.input)) for c in plan.columns)
        predicate = plan.predicate and self.renamed(plan.predicate, t1=plan.input)
        self.names[plan] = {c.name: c.name for c in columns}
        return self.ensure("select", [parent], columns, {"predicate": predicate, "expands": True},
                           parent.insert_only, layout=self._bound())

    def _temporal(self, plan: Select) -> Node:
        """A filter that reads the clock (frontend.temporal): its rows leave as it moves."""
        parent = self.node_for(plan.input)
        predicate = self.renamed(plan.predicate, t1=plan.input)
        columns = tuple(Col(c.name, self.renamed(c.expr, t1=plan.input)) for c in plan.columns)
        temporal, bounds, monotone = classify(predicate)
        definition = {"predicate": predicate, "temporal": True, "monotone": monotone,
                      "bounds": [[b.column, b.op, b.expr] for b in bounds],
                      "clock_conjuncts": clock_conjuncts(predicate)}
        self.check_horizon(parent, bounds if monotone else [])
        node = self.ensure("select", [parent], columns, definition, False)
        self._index_parent(node, parent, [b.column for b in bounds])
        self.names[plan] = {c.name: c.name for c in columns}
        return node

    def _outer_join(self, plan: Join) -> Node:
        """A left, semi or anti join (inner joins are blocks')."""
        left, right = self.node_for(plan.left), self.node_for(plan.right)
        self.check_horizon(left, None)
        self.check_horizon(right, None)
        inputs = {"t1": plan.left, "t2": plan.right}
        columns = tuple(Col(c.name, self.renamed(c.expr, **inputs)) for c in plan.columns)
        condition = self.renamed(plan.condition, **inputs)
        insert_only = plan.join_type == "semi" and left.insert_only and right.insert_only
        node = self.ensure("join", [left, right], columns,
                           {"join_type": plan.join_type, "condition": condition}, insert_only)
        self._index_join_keys(node, left, right)
        self.names[plan] = {c.name: c.name for c in columns}
        return node

    def _aggregate(self, plan: Aggregate) -> Node:
        """GROUP BY: shared, expanded or rerouted through the groups already kept
        (mqo.regroup)."""
        parent = self.node_for(plan.input)
        self.check_horizon(parent, None)
        groups = tuple(Col(g.name, self.renamed(g.expr, t1=plan.input)) for g in plan.groups)
        aggs = tuple(dataclasses.replace(a, arg=self.renamed(a.arg, t1=plan.input))
                     if a.arg is not None else a for a in plan.aggregates)
        args = sorted({a.arg for a in aggs if a.arg is not None})
        categories = {a: _category(t) for a, t in zip(args, self.probe_types(parent, args))}
        categories.update(self._declared_scales(parent, [a for a in args
                                                         if categories[a] == "numeric"]))
        node, self.names[plan] = regroup.aggregate(self, parent,
                                                   regroup.Want(groups, aggs, categories))
        return node

    def _distinct(self, plan: Distinct) -> Node:
        parent = self.node_for(plan.input)
        self.check_horizon(parent, None)
        # the parent may be a shared node with more columns than this plan reads; two
        # of the plan's columns may be one of the node's (`DISTINCT k AS a, k AS b`)
        columns = tuple(Col(c, sql.Identifier("t1", c).as_string(self.conn))
                        for c in dict.fromkeys(self.columns_of(plan.input)))
        self.names[plan] = self.names[plan.input]
        return self.ensure("distinct", [parent], columns, {}, parent.insert_only)

    def _declared_scales(self, parent: Node, args: list[str]) -> dict[str, str]:
        """"numeric:<scale>" for the arguments whose every value has one scale: a
        column of the parent declared with it (numeric(12,2)), or arithmetic that fixes
        it (l_extendedprice * (1 - l_discount)): their sums need no largest scale kept
        (argus.aggregates)."""
        if not args:
            return {}
        scales = dict(self.conn.execute(
            """SELECT attname, CASE WHEN atttypid = 'numeric'::regtype
                                    THEN (atttypmod - 4) & 65535 ELSE 0 END
                 FROM pg_attribute
                WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped
                  AND (atttypid = 'numeric'::regtype AND atttypmod >= 4
                       OR atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype))""",
            (parent.hist.as_string(self.conn),)).fetchall())
        fixed = {arg: fixed_scale(arg, scales) for arg in args}
        return {arg: f"numeric:{scale}" for arg, scale in fixed.items() if scale is not None}

    def _recursive(self, plan: Recursive) -> Node:
        """A WITH RECURSIVE relation (argus.nodes.recursive): its non-recursive branches'
        node must never retract a row, or the relation would have to retract what that
        row derived."""
        base = self.node_for(plan.input)
        if not base.insert_only:
            raise UnsupportedQueryError(
                "WITH RECURSIVE whose non-recursive branches retract rows (an aggregate, "
                "EXCEPT, a window, an outer join, the clock…)",
                "its non-recursive branches must be selections and joins of streams")
        streams = [self._stream_node(s) for s in sorted(set(plan.streams))]
        if not all(s.insert_only for s in streams):
            raise UnsupportedQueryError(
                "WITH RECURSIVE whose recursive step reads a table (its rows change: what "
                "a changed row derived would have to be retracted)",
                "the recursive step must read insert-only streams")
        for parent in [base, *streams]:
            self.check_horizon(parent, None)
        columns = tuple(Col(c, f"argus_recursive_{i}") for i, c in enumerate(plan.columns))
        definition = {"base": self.columns_of(plan.input), "step": plan.step,
                      "values": list(plan.values), "streams": list(plan.streams),
                      "keys": sorted({c for s, c in plan.keys if s is None})}
        self.names[plan] = {c: c for c in plan.columns}
        node = self.ensure("recursive", [base, *streams], columns, definition, True,
                           layout=self._bound())
        by_name = {p.hist_ref[1]: p for p in streams}  # each round probes the streams
        self._record_indexes(node, [(by_name[s], [c]) for s, c in plan.keys if s is not None])
        return node

    def _windowed(self, plan: Window) -> Node:
        definition = {"keys": len(plan.keys)} | ({"keep": list(plan.keep)} if plan.keep
                                                  else {})
        return self._window(plan, plan.keys + plan.columns, definition)

    def _window(self, plan: Window | Aggregate, columns, definition: dict) -> Node:
        """A window node: its partitions (the first definition['keys'] columns) computed
        again when a cycle's changes touch them."""
        parent = self.node_for(plan.input)
        self.check_horizon(parent, None)
        columns = tuple(Col(c.name, self.renamed(c.expr, t1=plan.input)) for c in columns)
        key_of = {c.expr: c.name for c in columns[:definition["keys"]]}
        self.names[plan] = {c.name: key_of.get(c.expr, c.name) for c in columns}
        # (a column that is a partition key is read from the key's column: a second copy
        # would widen every row and ask a second index of the same values)
        columns = columns[:definition["keys"]] + tuple(
            c for c in columns[definition["keys"]:] if c.expr not in key_of)
        if definition.get("keep"):  # the parent columns its windows read, kept too, so
            # that new rows can be ranked with the kept ones (nodes.window: the merge)
            passed = {sqlglot.parse_one(c.expr, read=DIALECT) for c in columns}
            read = sorted({c.name for col in columns
                           for c in sqlglot.parse_one(col.expr, read=DIALECT).find_all(exp.Column)
                           if c.table == "t1" and exp.column(c.name, table="t1", quoted=True)
                           not in passed})
            columns += tuple(Col(f"argus_r{i}", exp.column(name, table="t1", quoted=True)
                                 .sql(DIALECT)) for i, name in enumerate(read))
        node = self.ensure("window", [parent], columns, definition, False)
        plain = {sql.Identifier("t1", c).as_string(self.conn): c for c in parent.columns}
        keys = list(itertools.takewhile(plain.__contains__,
                                        (c.expr for c in columns[:definition["keys"]])))
        terms = top_order(node, parent)  # each touched partition's first rows, in order
        if terms:  # (its partition keys are the parent's columns: all in `keys`)
            self._top_index(node, parent, [plain[k] for k in keys], terms)
        elif keys and reads_parent_partitions(node, parent):  # the partitions it touched,
            plan = window_suffix(node)  # from their frontiers on (by the ORDER BY column)
            by = [plain[plan.order]] if plan is not None and plan.order in plain else []
            self._record_indexes(node, [(parent, [plain[k] for k in keys] + by)])
        return node

    def _recomputed_groups(self, plan: Aggregate) -> Node:
        """GROUP BY with an aggregate argus keeps no bookkeeping for (string_agg,
        percentile_cont, sum(DISTINCT) …: grouping.HOLISTIC): a window node grouping
        its partitions, each group computed again, all its aggregates with it, when a
        cycle's changes touch it."""
        calls = [Col(a.name, a.arg if a.func == HOLISTIC else a.call) for a in plan.aggregates]
        return self._window(plan, list(plan.groups) + calls,
                            {"keys": len(plan.groups), "grouped": True})

    def renamed(self, text: str, **inputs: Plan) -> str:
        """SQL over plan inputs (t1, t2) as SQL over their nodes' columns."""
        maps = {alias: self.names[p] for alias, p in inputs.items()}
        if all(k == v for m in maps.values() for k, v in m.items()):
            return text
        return substitute(text, {alias: {n: exp.column(c, table=alias, quoted=True)
                                         for n, c in m.items()}
                                 for alias, m in maps.items()}).sql(DIALECT)

    def columns_of(self, plan: Plan) -> list[str]:
        """The node columns holding a plan's columns, in the plan's order."""
        return [self.names[plan][n] for n in plan.names]

    def _source(self, plan: Plan
                ) -> tuple[int, dict[str, str], dict[str, str], frozenset[str]]:
        node = self.node_for(plan)
        return node.id, self.names[plan], dict(zip(node.columns, node.types)), \
            self._finite(node)

    def _finite(self, node: Node) -> frozenset[str]:
        """The node's columns that hold a stream's time column as it is (its inbox
        refuses infinite times; a table's rows come from the application): sharing
        may take one band window of them to imply a wider one."""
        if node.loaded:
            return self._once(("finite", node.id), lambda: frozenset(
                r[0] for r in self.conn.execute(
                    "SELECT time_column FROM argus_catalog.streams WHERE node_id = %s "
                    "AND time_column IS NOT NULL", (node.id,))
                if node.insert_only))  # (a table: stream.is_table)
        if not node.kind_of.selects or len(node.parents) != 1:
            return frozenset()
        passed = {sql.Identifier("t1", c).as_string(None): c
                  for c in self._finite(self.load(node.parents[0]))}
        return frozenset(c for c, e in zip(node.columns, node.exprs) if e in passed)

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

    def _bound(self) -> dict:
        return {} if self.row_bound is None else {"bound": self.row_bound}

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
        if of.selects and not definition.get("temporal") and (
                self._over_groups(parents[0]) or self._over_top_k(parents[0], definition, exprs)):
            layout["virtual"] = True
        if of.groups:
            layout |= growing(definition, parents[0])
        signature_text = signature(kind, parents, names, exprs, definition, self._scope(private))
        found = self.conn.execute(
            "SELECT node_id, node_id IN (SELECT node_id FROM argus.excluded_nodes()) "
            "FROM argus_catalog.nodes WHERE md5(signature) = md5(%s)",
            (signature_text,)).fetchone()
        if not found:
            found = self._lazy(signature_text)
        if found and found[1]:  # the same node, isolated since a failure: stale, not shared
            signature_text = signature(kind, parents, names, exprs, definition,
                                       f"{self._scope(private)} beside isolated node {found[0]}")
            found = None
        if found:
            node = self.load(found[0])
            if entry is not None and self._block(node.id) is None:
                self._record(node, parents, entry)
            return node
        new = self._decide(NewNode(kind, tuple(self._readied(kind, parents, definition)),
                                   names, exprs, definition, layout, insert_only,
                                   signature_text, copy=copy), table)
        return self.create(new, entry)

    def _lazy(self, signature_text: str) -> tuple[int, bool] | None:
        """The join built lazily as this signature's (found by no signature): this
        query's own, planned again, or this build's (a set operation's two branches over
        one join) as it is; any other query's made whole first, as for a second reader
        (found by a helper: a second query's migration built it again, and failed on the
        node's duplicate signature). (node, isolated since a failure), as ensure's."""
        found = self.conn.execute(
            "SELECT node_id, node_id IN (SELECT node_id FROM argus.excluded_nodes()) "
            "FROM argus_catalog.nodes WHERE layout->'lazy'->>'signature' = %s",
            (signature_text,)).fetchone()
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
        signature_text = new.signature
        if lazily:  # (found by no signature: another query must not read it)
            limit = None
            layout = {**layout, "lazy": {"signature": signature_text}}
            signature_text = signature(new.kind, parents, new.names, new.exprs, definition,
                                       f"built lazily as {signature_text}")
        if of.selects and self.view_of_stream(parents[0], definition, layout, new.exprs):
            layout = {**layout, "virtual": True}
        if (of.joins and definition.get("join_type") == "inner" and not new.insert_only
                and (found := expiry.of_inputs(parents, self.load))):
            layout = {**layout, "expiry": list(found)}  # (nodes/expiry)
        fill = "lazily" if lazily else "view" if view_now else "copy" if (
            copy is not None and new.insert_only) else "parents"
        return dataclasses.replace(new, layout=layout, signature=signature_text,
                                   fill=fill, limit=limit, copy=copy)

    def _scope(self, private: bool = False) -> str | None:
        """The scope of a node's signature (nodes.base.signature): this query's, for
        nodes that must not be shared (sharing "none", or joins when join sharing is
        off); None, everyone's."""
        return self.query if private or self.sharing.strategy == "none" else None

    def _record(self, node: Node, parents: list[Node], entry: IndexEntry) -> None:
        index.record_block(self.conn, node.id, entry.sources, entry.predset, entry.dpredset,
                           entry.atoms, [p.id for p in parents])
        self.forget()
        self._candidates.clear()

    def _store(self, node: Node, parents: list[Node]) -> None:
        store_blocks(self.conn, node, parents, code=not self.predicting)
        self.compiled.add(node.id)
