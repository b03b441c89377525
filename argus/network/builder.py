"""The shared network as the catalog records it: load it, add nodes, drop unused ones.

A plan is mapped to nodes bottom-up; a node whose canonical signature already exists is
reused, so equal subplans of different queries share one node and its tables.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import psycopg
import sqlglot
from psycopg import sql
from sqlglot import exp

from ..aggregates import Model, entries, fixed_scale
from ..errors import QueryError, UnknownStreamError, UnsupportedQueryError
from ..frontend.canon import map_atom
from ..frontend.constants import Constants
from ..frontend.lateral import expands
from ..frontend.planner import HOLISTIC
from ..frontend.temporal import classify, clock_conjuncts
from ..mqo import index, regroup
from ..mqo.blocks import describe, is_spj, substitute
from ..mqo.order import Estimates, Tree
from ..mqo.replan import Replan
from ..mqo.sharing import BlockBuilder, IndexEntry, Sharing, column_name, fresh_name
from ..names import NETWORK_SCHEMA
from ..nodes import COMPILERS, KINDS, SIGN_ID, Node, delta_view, signature, virtual
from ..nodes.aggregate import parent_index_name
from ..nodes import expiry, lazy as lazy_nodes, rerun
from ..nodes.lazy import is_lazy
from ..nodes.window import reads_parent_partitions, suffix as window_suffix, top_order
from ..nodes.join import deferred, guards, join_condition, one_sided
from ..plan import (Aggregate, Col, Distinct, Join, Plan, Recursive, Scan, Select, SetOp,
                    Window)
from ..trees import DIALECT, never_fails
from . import indexes, jisc, records
from .apply import SEQUENCE_GAP, Apply, NewNode
from .groups import CatalogGroups
from . import shards
from .reads import Reads, load_node, network_bytes
from .stored import execute_all, store_blocks


def _category(pg_type: str) -> str:
    """How an aggregate keeps the sums of an argument of this type (argus.aggregates)."""
    return {"smallint": "int", "integer": "int", "bigint": "int8", "numeric": "numeric",
            "real": "float4", "double precision": "float8"}.get(pg_type, "other")


class Builder(Reads, Apply):
    """Maps plans to nodes inside the registration's transaction.

    Selections and inner joins are covered through the computation index
    (`argus.mqo.sharing`); every other plan node is shared when an equal node (same kind,
    parents, columns and definition: its signature) exists. Shared nodes name their
    columns their own way, so each plan's columns are mapped to its node's (`names`),
    and SQL over a plan's inputs is renamed before it becomes a node's."""

    def __init__(self, conn: psycopg.Connection, sharing: Sharing | None = None,
                 query: str = "") -> None:
        super().__init__(conn)
        self.sharing = sharing or Sharing()
        self.query = query  # salts the signatures of nodes that must not be shared
        self.created: list[Node] = []
        self.names: dict[Plan, dict[str, str]] = {}  # plan column -> node column
        self._memo: dict[Plan, Node] = {}
        self.compiled: set[int] = set()  # nodes whose code this registration (re)compiled
        self.constants = Constants(conn)
        self.groups = CatalogGroups(conn)
        self.join_orders: list[dict] = []  # each block's tree by cost, and alternatives
        self.replan: Replan | None = None  # a registered query planned again (argus.adapt)
        self.lazy = False  # build new inner joins lazily (a JISC migration: network.jisc)
        self.pending_lazy: set[int] = set()  # the lazy joins built, until jisc.settle
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
        if isinstance(plan, Scan):
            node = self._stream_node(plan.stream)
            self.names[plan] = {c: c for c in plan.columns}
            return node
        if is_spj(plan):
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
        if isinstance(plan, Select) and any(expands(c.expr) for c in plan.columns):
            # a set-returning function's rows (frontend.lateral): shared by signature only
            parent = self.node_for(plan.input)
            self.check_horizon(parent, None)
            columns = tuple(Col(c.name, self.renamed(c.expr, t1=plan.input))
                            for c in plan.columns)
            predicate = plan.predicate and self.renamed(plan.predicate, t1=plan.input)
            self.names[plan] = {c.name: c.name for c in columns}
            return self.ensure("select", [parent], columns,
                               {"predicate": predicate, "expands": True, **self._bound()},
                               parent.insert_only)
        if isinstance(plan, Select):  # a temporal filter
            parent = self.node_for(plan.input)
            predicate = self.renamed(plan.predicate, t1=plan.input)
            columns = tuple(Col(c.name, self.renamed(c.expr, t1=plan.input))
                            for c in plan.columns)
            temporal, bounds, monotone = classify(predicate)
            definition = {"predicate": predicate, "temporal": True, "monotone": monotone,
                          "bounds": [[b.column, b.op, b.expr] for b in bounds],
                          "clock_conjuncts": clock_conjuncts(predicate)}
            self.check_horizon(parent, bounds if monotone else [])
            node = self.ensure("select", [parent], columns, definition, False)
            self._index_parent(node, parent, [b.column for b in bounds])
            self.names[plan] = {c.name: c.name for c in columns}
            return node
        if isinstance(plan, Join):  # left, semi and anti joins
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
        if isinstance(plan, Aggregate) and any(a.func == HOLISTIC for a in plan.aggregates):
            return self._recomputed_groups(plan)
        if isinstance(plan, Aggregate):
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
        if isinstance(plan, Distinct):
            parent = self.node_for(plan.input)
            self.check_horizon(parent, None)
            # the parent may be a shared node with more columns than this plan reads; two
            # of the plan's columns may be one of the node's (`DISTINCT k AS a, k AS b`)
            columns = tuple(Col(c, sql.Identifier("t1", c).as_string(self.conn))
                            for c in dict.fromkeys(self.columns_of(plan.input)))
            self.names[plan] = self.names[plan.input]
            return self.ensure("distinct", [parent], columns, {}, parent.insert_only)
        if isinstance(plan, Window):
            definition = {"keys": len(plan.keys)} | ({"keep": list(plan.keep)} if plan.keep
                                                      else {})
            return self._window(plan, plan.keys + plan.columns, definition)
        if isinstance(plan, Recursive):
            return self._recursive(plan)
        if isinstance(plan, SetOp):
            node, columns = self._setop(plan)
            self.names[plan] = dict(zip(plan.names, columns))
            return node
        raise TypeError(f"no node kind for {type(plan).__name__}")  # pragma: no cover

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
                      "keys": sorted({c for s, c in plan.keys if s is None}),
                      **self._bound()}
        self.names[plan] = {c: c for c in plan.columns}
        node = self.ensure("recursive", [base, *streams], columns, definition, True)
        by_name = {p.hist_ref[1]: p for p in streams}  # each round probes the streams
        self._record_indexes(node, [(by_name[s], [c]) for s, c in plan.keys if s is not None])
        return node

    def _window(self, plan: Window | Aggregate, columns, definition: dict) -> Node:
        """A window node: its partitions (the first definition['keys'] columns) computed
        again when a cycle's changes touch them."""
        parent = self.node_for(plan.input)
        self.check_horizon(parent, None)
        columns = tuple(Col(c.name, self.renamed(c.expr, t1=plan.input)) for c in columns)
        self.names[plan] = {c.name: c.name for c in columns}
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
        percentile_cont, sum(DISTINCT) …: planner.HOLISTIC): a window node grouping
        its partitions, each group computed again, all its aggregates with it, when a
        cycle's changes touch it."""
        calls = [Col(a.name, a.arg if a.func == HOLISTIC else a.call) for a in plan.aggregates]
        return self._window(plan, list(plan.groups) + calls,
                            {"keys": len(plan.groups), "grouped": True})

    def _setop(self, plan: SetOp) -> tuple[Node, list[str]]:
        """A set operation's node and its columns, in the plan's order. UNION ALL and
        INTERSECT [ALL] are commutative, and UNION ALL associative: their operands are
        put in a canonical order, and a UNION ALL reuses the largest existing UNION ALL
        of some of its operands (ARGUS §5.4)."""
        operands = _union_operands(plan) if plan.op == "union_all" else [plan.left, plan.right]
        sides = [(self.node_for(p), self.columns_of(p)) for p in operands]
        if len({len(c) for _, c in sides}) > 1:
            raise QueryError("each side of a set operation must have the same number of "
                             "columns")
        for node, _ in sides:
            self.check_horizon(node, None)
        if plan.op in ("except", "except_all") or self.sharing.strategy == "none":
            keyed = [(None, s) for s in sides]
        else:
            keyed = sorted((_operand_key(n, c), (n, c)) for n, c in sides)
        current, rest = keyed[0][1], keyed[1:]
        chain = [keyed[0][0]]
        if plan.op == "union_all" and self.sharing.strategy != "none" and len(keyed) > 2:
            found = self._union_cover([k for k, _ in keyed])
            if found is not None:
                node, covered = found
                current = (node, list(node.columns))
                chain = list(covered)
                rest = _without(keyed, covered)
        for key, (node, columns) in rest:
            left, left_columns = current
            insert_only = (plan.op in ("union_all", "intersect", "intersect_all")
                           and left.insert_only and node.insert_only)
            merged = self.ensure(
                "setop", [left, node],
                tuple(Col(n, f"t1.{i} | t2.{i}") for i, n in enumerate(left_columns, 1)),
                {"op": plan.op, "left": left_columns, "right": columns}, insert_only)
            chain.append(key)
            if plan.op != "except" and None not in chain:
                self.conn.execute(
                    "INSERT INTO argus_catalog.setop_topology VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING", (merged.id, plan.op, sorted(chain)))
            current = (merged, list(merged.columns))
        return current

    def _union_cover(self, keys: list[str]) -> tuple[Node, list[str]] | None:
        """The largest existing UNION ALL whose operands are some of `keys`."""
        for node_id, operands in self.conn.execute(
                """SELECT s.node_id, s.operands FROM argus_catalog.setop_topology s
                     JOIN argus_catalog.node_stats n USING (node_id)
                    WHERE s.op = 'union_all' AND s.operands <@ %s::text[]
                      AND s.node_id NOT IN (SELECT node_id FROM argus.excluded_nodes())
                    ORDER BY cardinality(s.operands) DESC, n.hist_rows DESC, s.node_id""",
                (keys,)):
            if _without([(k, None) for k in keys], operands) is not None:
                return self.load(node_id), operands
        return None

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
        return self.ensure("rerun", parents, columns, {"sql": text, **self._bound()}, False)

    def _bound(self) -> dict:
        return {} if self.row_bound is None else {"bound": self.row_bound}

    def make_select(self, parent: Node, predicate: str | None, columns: list[Col],
                    entry: IndexEntry) -> Node:
        self.check_horizon(parent, None)
        return self.ensure("select", [parent], tuple(columns), {"predicate": predicate},
                            parent.insert_only, entry)

    def make_join(self, left: Node, right: Node, condition: str, columns: list[Col],
                  entry: IndexEntry, copy: tuple[int, dict[str, str]] | None = None) -> Node:
        self.check_horizon(left, None)
        self.check_horizon(right, None)
        node = self.ensure("join", [left, right], tuple(columns),
                            {"join_type": "inner", "condition": condition},
                            left.insert_only and right.insert_only, entry,
                            salted=not self.sharing.join_sharing, copy=copy)
        self._index_join_keys(node, left, right)
        return node

    def enrich(self, node: Node, atoms: set[str]) -> Node:
        """Projection enrichment: add columns holding `atoms` (over the node's STAs) to
        a shared selection or join node, first to the parents that lack them, and
        refill it from its parents. Its children and the views over it read columns by
        name, so they are unaffected."""
        if is_lazy(self.load(node.id)):  # (its full view and completed keys lack them)
            jisc.finish(self.conn, [node.id])
            self.forget()
        node = self.load(node.id)  # the caller's may predate an enrichment of it
        atoms = atoms - set(self.atoms(node))
        if not atoms:  # (two instances of one query read it, and the other's added them)
            return node
        parents = [self.load(p) for p in node.parents]
        width = len(self.sources_of(parents[0])) if node.kind_of.joins else None
        wanted: dict[int, set[str]] = {}
        plan = []
        for atom in sorted(atoms):
            k = int(atom.split(".", 1)[0].strip('"')[1:])
            side = 1 if node.kind_of.selects or k <= width else 2
            parent_atom = atom if side == 1 or node.kind_of.selects else \
                map_atom(atom, {k: k - width})
            wanted.setdefault(side, set()).add(parent_atom)
            plan.append((atom, side, parent_atom))
        for side, parent_atoms in wanted.items():
            parent = parents[side - 1]
            missing = parent_atoms - set(self.atoms(parent))
            if missing:
                parents[side - 1] = self.enrich(parent, missing)
        taken = set(node.columns)
        added = []
        for atom, side, parent_atom in plan:
            parent = parents[side - 1]
            column = self.atoms(parent)[parent_atom]
            name = fresh_name(column_name(atom, len(self.sources_of(node))), taken)
            pg_type = dict(zip(parent.columns, parent.types))[column]
            added.append((name, sql.Identifier(f"t{side}", column).as_string(self.conn),
                          pg_type, atom))
        tables = [t for t, view in ((node.hist, virtual(node)), (node.delta, delta_view(node)))
                  if not view]
        for table in tables:
            self.conn.execute(sql.SQL("ALTER TABLE {} {}").format(table, sql.SQL(", ").join(
                sql.SQL("ADD COLUMN {} {}").format(sql.Identifier(n), sql.SQL(t))
                for n, _, t, _ in added)))
        records.add_columns(self.conn, node, added)
        self.forget()
        node = self.load(node.id)
        records.set_signature(self.conn, node.id,
                              self._resigned(node, parents, node.definition))
        if virtual(node):  # the views gain the columns at their end
            execute_all(self.conn, COMPILERS[node.kind].views(node, parents))
        else:
            self.conn.execute(sql.SQL("TRUNCATE {}").format(node.hist))
            execute_all(self.conn, COMPILERS[node.kind].backfill(
                node, list(map(lazy_nodes.readable, parents))))
            self.conn.execute(sql.SQL("ANALYZE {}").format(node.hist))  # as a new node's
        self._store(node, parents)
        self._candidates.clear()
        return node

    def check_horizon(self, parent: Node, bounds) -> None:
        """A node whose old rows were purged can only feed a new consumer that would
        never read them: a selection with a lower time bound on the column the node was
        purged by that starts after the horizon (at it, only for a strict bound: the
        rows at the horizon may have been purged). `bounds` is None for any other
        consumer."""
        horizon, column = self.conn.execute(
            "SELECT horizon, horizon_column FROM argus_catalog.node_stats WHERE node_id = %s",
            (parent.id,)).fetchone()
        if horizon is None:
            return
        stream = self.conn.execute("SELECT name FROM argus_catalog.streams WHERE node_id = %s",
                                   (parent.id,)).fetchone()
        what = f"stream {stream[0]!r}" if stream else f"node {parent.id}"
        kept = f"{column} > {horizon}" if column else f"its rows after {horizon}"
        need = "all of its rows"
        for bound in bounds or []:
            if bound.column != column:
                continue
            ok, start = self.conn.execute(sql.SQL(
                "SELECT ({})::timestamptz {} %s::timestamptz, ({})::text").format(
                    sql.SQL(bound.expr), sql.SQL(">=" if bound.op == ">" else ">"),
                    sql.SQL(bound.expr)), (horizon,)).fetchone()
            if ok:
                return
            need = f"the rows with {column} {bound.op} {start}"
        if bounds and need == "all of its rows":
            need = f"rows older than {kept} by its other columns"
        raise QueryError(
            f"{what} keeps only the rows with {kept}: older rows were purged because every "
            f"query reading it is windowed on {column}; this query needs {need}. Give it a "
            f"window on {column} that starts after {horizon}.")

    def _index_parent(self, node: Node, parent: Node, columns: list[str]) -> None:
        """Index the parent on the time columns the node's bounds compare, so that
        purging the parent finds its old rows without a scan."""
        self._record_indexes(node, [(parent, [c]) for c in columns if c in parent.columns])

    def _stream_node(self, stream: str) -> Node:
        row = self.conn.execute("SELECT node_id FROM argus_catalog.streams WHERE name = %s",
                                (stream,)).fetchone()
        if row is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        return load_node(self.conn, row[0])

    def ensure(self, kind: str, parents: list[Node], columns, definition: dict,
                insert_only: bool, entry: IndexEntry | None = None,
                salted: bool = False, copy: tuple[int, dict[str, str]] | None = None
                ) -> Node:
        """The node computing `columns` of `parents` as `definition` says: an equal one
        (by signature), else a new one, decided (NewNode) and then made."""
        names = tuple(c.name for c in columns)
        exprs = tuple(c.expr for c in columns)
        of = KINDS[kind]
        if of.selects and not definition.get("temporal") and (
                self._over_groups(parents[0]) or self._over_top_k(parents[0], definition, exprs)):
            definition = {**definition, "virtual": True}
        if of.groups:
            definition = growing(definition, parents[0])
        signature_text = signature(kind, parents, names, exprs, definition, self._salt(salted))
        found = self.conn.execute(
            "SELECT node_id, node_id IN (SELECT node_id FROM argus.excluded_nodes()) "
            "FROM argus_catalog.nodes WHERE md5(signature) = md5(%s)",
            (signature_text,)).fetchone()
        if not found and self.own_nodes():  # its own lazily built join, planned again
            found = self.conn.execute(
                "SELECT node_id, false FROM argus_catalog.nodes WHERE node_id = ANY(%s) "
                "AND definition->'lazy'->>'signature' = %s",
                (sorted(self.own_nodes()), signature_text)).fetchone()
        if found and found[1]:  # the same node, isolated since a failure: stale, not shared
            signature_text = signature(kind, parents, names, exprs, definition,
                                       f"{self._salt(salted)} beside isolated node {found[0]}")
            found = None
        if found:
            node = self.load(found[0])
            if entry is not None and self._block(node.id) is None:
                self._record(node, parents, entry)
            return node
        new = self._decide(NewNode(kind, tuple(self._readied(kind, parents, definition)),
                                   names, exprs, definition, insert_only, signature_text,
                                   copy=copy), salted)
        return self.create(new, entry)

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

    def _decide(self, new: NewNode, salted: bool) -> NewNode:
        """How a new node keeps its rows and is filled (nothing written yet): built
        lazily (a JISC migration's inner join), a view at once or past a limit (a
        join large next to its inputs), a view of a stream (a selection passing most of
        it), a copy of a migrated node's rows, or filled from its parents."""
        of, definition, parents = KINDS[new.kind], new.definition, list(new.parents)
        copy = None if new.copy is not None and new.copy[0] in self.taken else new.copy
        lazily = (self.lazy and of.joins and new.insert_only and copy is None
                  and definition.get("join_type") == "inner")
        limit = None  # an inner join's rows past which it is a view (_view_of_join)
        if of.joins and new.insert_only and not any(map(is_lazy, parents)):
            limit = self._view_of_join(parents, definition, new.names, new.exprs)
        view_now = lazily and limit is not None and self._estimated_rows(
            parents, definition) >= limit  # (a lazy join's view: nothing to fill, complete)
        lazily = lazily and not view_now
        signature_text = new.signature
        if lazily:  # (found by no signature: another query must not read it)
            limit = None
            definition = {**definition, "lazy": {"signature": signature_text}}
            signature_text = signature(new.kind, parents, new.names, new.exprs, definition,
                                       self._salt(salted))
        if of.selects and self.view_of_stream(parents[0], definition, new.exprs):
            definition = {**definition, "virtual": True}
        if (of.joins and definition.get("join_type") == "inner" and not new.insert_only
                and (found := expiry.of_inputs(parents, self.load))):
            definition = {**definition, "expiry": list(found)}  # (nodes/expiry)
        fill = "lazily" if lazily else "view" if view_now else "copy" if (
            copy is not None and new.insert_only) else "parents"
        return dataclasses.replace(new, definition=definition, signature=signature_text,
                                   fill=fill, limit=limit, copy=copy)

    def _unsharded(self, node: Node) -> Node:
        """The node with its history back on the coordinator (Citus plans an outer,
        semi or anti join of a distributed table only with another co-located with it,
        and no join of one with a table of the coordinator's)."""
        if node.sharded_by is None:
            return node
        node = shards.unshard(self.conn, node)
        store_blocks(self.conn, node, [self.load(p) for p in node.parents])
        self.forget()
        return node

    def sharded(self) -> dict[str, shards.Sharded]:
        """The distributed streams (on Citus; none elsewhere), read once."""
        return self._once(("sharded",), lambda: shards.sharding(self.conn))

    def shard_created(self, local: frozenset[int] = frozenset()) -> None:
        """On Citus, the nodes this registration made sharded where they can be
        (shards.place_all), but those in `local`. Last, once every backfill ran: Citus
        opens no new connection to a shard placement that DDL touched in the
        transaction, and a backfill's repartition join needs some."""
        self.created = shards.place_all(self.conn, self.created, self.load, self.sharded(),
                                        local)
        self.forget()

    def on_coordinator(self, node: Node) -> Node:
        """The node with its history on the coordinator, for an answer whose changes
        view Citus cannot plan over the workers (one that reads the clock: a UNION ALL
        of the history and its delta); a stream's history on the workers is refused."""
        if node.loaded and node.hist_ref[1] in self.sharded():
            raise UnsupportedQueryError(
                f"argus_now() in the output of a query over stream {node.hist_ref[1]!r}, "
                "whose history is on the Citus workers, is not supported yet: compute it "
                "over a selection or an aggregate of the stream, or read argus_now() "
                "when reading the answer")
        return self._unsharded(node)

    def _stored(self, node: Node) -> Node:
        """The node whose table holds the rows of `node` (itself, unless it is a view of
        a selection's; a virtual join's rows are held by no one table: itself)."""
        while delta_view(node):
            node = self.load(node.parents[0])
        return node

    def _over_groups(self, parent: Node) -> bool:
        """The parent is an aggregate's groups, or a view of them."""
        return self._stored(parent).kind_of.groups

    def _over_top_k(self, parent: Node, definition: dict, exprs) -> bool:
        """The parent is a Top-K window node (or a view of one), which keeps only rows
        that pass a selection of its ranks, and the selection cannot fail on a row (a
        view's error would surface when the answer is read)."""
        stored = self._stored(parent)
        return stored.kind_of.top_k(stored) is not None \
            and all(map(never_fails, filter(None, [definition.get("predicate"), *exprs])))

    def view_of_stream(self, parent: Node, definition: dict, exprs) -> bool:
        """ARGUS's conditional materialization: a selection over a stream (through
        selections that keep no table) that passes most of the stream's rows is not
        worth a copy of them; its consumers read the stream's history through a view,
        by the stream's indexes. So is one over a virtual join (a narrower query
        sharing a loose chain: 2M rows copied of its 2.5M). Most: more than
        settings.virtual_selectivity, by PostgreSQL's estimate. Only a selection that
        cannot fail on a row: a view's error would surface when the answer is read, not
        in the cycle that isolates it."""
        predicate = definition.get("predicate")
        if definition.get("temporal") or definition.get("virtual") or not all(
                map(never_fails, filter(None, [predicate, *exprs]))):
            return False
        layout, threshold, _, _ = self._layout()
        base = self._stored(parent)
        if layout != "cost" or threshold is None or not (
                base.loaded or base.kind_of.joins and virtual(base)):
            return False
        return self.share_of(parent, predicate, base) > threshold

    def estimates(self, block) -> Estimates | None:
        return self.block_estimates(block) if self._layout()[0] == "cost" else None

    def estimated(self, node: Node, rows: float, rate: float, inflow: dict[int, float]
                  ) -> None:
        estimate = {"rows": round(rows, 1), "rate": round(rate, 2),
                    "inflow": {str(s): round(r, 2) for s, r in inflow.items()}}
        records.set_estimate(self.conn, node.id, estimate)

    def _order_record(self, block, tree: Tree, alternatives: list[Tree]) -> dict:
        """A block's chosen tree and the best alternatives, as `argus explain` shows them:
        instances by their sources' names."""
        def described(t: Tree) -> dict:
            return {"tree": t.text(lambda i: self._instance_name(block, i)),
                    "cpu": round(t.cpu, 1), "state": round(t.state)}

        return {**described(tree), "alternatives": [described(t) for t in alternatives]}

    def _instance_name(self, block, i: int) -> str:
        source = self.load(block.sources[i - 1])
        return f"{source.definition.get('stream') or f'n{source.id}'}#{i}"

    def _layout(self) -> tuple[str, float | None, float | None, int | None]:
        return self._once(("layout",), lambda: self.conn.execute(
            "SELECT layout, virtual_selectivity, virtual_join_growth, state_budget "
            "FROM argus_catalog.settings").fetchone())

    def _view_of_join(self, parents: list[Node], definition: dict, names, exprs
                      ) -> int | None:
        """Conditional materialization of an inner join (Zhu's virtual intermediate
        states): when its answer is large next to its inputs — more than
        settings.virtual_join_growth times their rows together — a table of it costs
        more state and more flushing each cycle than joining its parents' histories,
        through their indexes, when a consumer reads or probes it. A chain of three
        transfers with a 20-day window held 8.9M rows for inputs of 100k, and flushing
        100k new ones was a third of its cycle. Under settings.state_budget, also a
        join whose rows would not fit in what the budget leaves (State-Removal, the
        joins first: they are the state that grows fastest). Only a join whose
        condition and columns cannot fail on a row (as a selection's, above) but by an
        overflow of + - * (its day windows), which the cycles evaluate on each new row
        (its delta, or a deferred join's guards). The rows past which it is to be a view
        (its backfill stops there), or None."""
        layout, _, growth, budget = self._layout()
        if layout != "cost" or (growth, budget) == (None, None) \
                or not may_be_view(definition, exprs) or self.sharded():
            return None  # (on Citus: a join's view over distributed histories is read
            # through set operations Citus 13 cannot plan, docs/scale-out.md)
        limits = []
        if growth is not None:
            inputs = sum(r[0] for r in self.conn.execute(
                "SELECT hist_rows FROM argus_catalog.node_stats WHERE node_id = ANY(%s)",
                ([p.id for p in parents],)))
            limits.append(int(growth * inputs) + 1)
        if budget is not None:  # a row's bytes: its width and a tuple header, twice
            left, right = parents  # (the delta's share too)
            plan = self.explain(sql.SQL("SELECT {} FROM {} AS t1 JOIN {} AS t2 ON {}").format(
                sql.SQL(", ").join(sql.SQL("{} AS {}").format(sql.SQL(e), sql.Identifier(n))
                                   for n, e in zip(names, exprs)),
                left.hist, right.hist, sql.SQL(definition["condition"])))
            row_bytes = 2 * (plan["Plan Width"] + 32)
            limits.append(max(budget - network_bytes(self.conn), 0) // row_bytes + 1)
        return min(limits)

    def _estimated_rows(self, parents: list[Node], definition: dict) -> float:
        """PostgreSQL's estimate of an inner join's rows: a lazily built join is not
        filled, so whether it is to be a view instead is decided on it."""
        return self.explain(sql.SQL("SELECT FROM {} AS t1 JOIN {} AS t2 ON {}").format(
            *(p.hist for p in parents), sql.SQL(definition["condition"])))["Plan Rows"]

    def _view_instead(self, node: Node, parents: list[Node]) -> Node:
        """The new join's table, filled up to its limit, gives way to a view."""
        self.conn.execute(sql.SQL("DROP TABLE {}").format(node.hist))
        return self._redefined(node, parents, virtual=True)

    def _redefined(self, node: Node, parents: list[Node], **changes: bool) -> Node:
        """A join whose definition changes how it keeps its rows (virtual, deferred):
        recorded, and its views made again to match."""
        node = dataclasses.replace(node, definition={**node.definition, **changes})
        records.set_definition(self.conn, node.id, node.definition)
        self.forget()
        execute_all(self.conn, COMPILERS["join"].views(node, parents))
        return node

    def defer(self, node: Node) -> Node:
        """A query's output that is a virtual join no node consumes: its delta is not
        computed by the cycles, its changes are when read (join/changes.sql). A join
        whose answer is many times its inputs gains as many changes per new row: a
        cycle computing them for no reader cost the loose chains most of theirs."""
        if not (node.kind_of.joins and virtual(node)) or "deferred" in node.definition:
            return node
        if self.conn.execute("SELECT 1 FROM argus_catalog.edges WHERE parent_id = %s",
                             (node.id,)).fetchone():
            return node
        parents = [self.load(p) for p in node.parents]
        if one_sided(node, parents) is None:
            return node
        try:  # the guards' arithmetic over the rows already there (join/guard)
            with self.conn.transaction():
                for _, statement in guards(node, parents, "hist"):
                    self.conn.execute(statement)
        except psycopg.errors.DataException:
            return node  # a row it overflows on: the cycles evaluate it and say so
        return self._deferral(node, True)

    def undefer(self, node: Node) -> Node:
        """A deferred join gains a consumer, which reads its delta each cycle: from now
        on the cycles compute it. Its delta table takes the last cycle's changes, and
        that cycle's record of them, so that the next cycle clears them; its query's
        changes view reads them through the same view, which now passes them on."""
        copied = self.conn.execute(sql.SQL("INSERT INTO {} ({}, {}) SELECT {}, {} FROM {}").format(
            node.delta_table, node.column_list, SIGN_ID, node.column_list, SIGN_ID,
            node.aux("changes"))).rowcount
        if copied:
            self.conn.execute(
                """INSERT INTO argus_catalog.run_nodes (run_id, node_id, inserted, retracted, ms)
                   SELECT max(run_id), %s, %s, 0, 0 FROM argus_catalog.runs
                    WHERE status = 'ok' HAVING max(run_id) IS NOT NULL
                   ON CONFLICT (run_id, node_id) DO UPDATE SET inserted = EXCLUDED.inserted""",
                (node.id, copied))
        return self._deferral(node, False)

    def _deferral(self, node: Node, defer: bool) -> Node:
        parents = [self.load(p) for p in node.parents]
        node = self._redefined(node, parents, deferred=defer)
        self._store(node, parents)  # its cycle code: the guards, or its delta's
        return node

    def _resigned(self, node: Node, parents: list[Node], definition: dict) -> str:
        """The signature of a node changed in place (enriched, restructured). Its own
        salt stays: a node of a query registered without sharing stays that query's. And
        it stays apart from an equal node made before: a twin computing the same rows.
        (Once an aggregate of a query without sharing, moved onto a finer one, took the
        signature of the shared twin it now equalled, and the registration failed.)"""
        (stored,) = self.conn.execute("SELECT signature FROM argus_catalog.nodes "
                                      "WHERE node_id = %s", (node.id,)).fetchone()
        parts = json.loads(stored)
        salt = parts[4] if len(parts) > 4 else None
        text = signature(node.kind, parents, node.columns, node.exprs, definition, salt)
        twin = self.conn.execute("SELECT node_id FROM argus_catalog.nodes WHERE "
                                 "md5(signature) = md5(%s) AND node_id <> %s",
                                 (text, node.id)).fetchone()
        if twin:
            text = signature(node.kind, parents, node.columns, node.exprs, definition,
                             f"{salt} beside its twin {twin[0]}")
        return text

    def _salt(self, salted: bool = False) -> str | None:
        """What makes a node's signature unique to this query: nodes that must not be
        shared (sharing "none", or joins when join sharing is off)."""
        return self.query if salted or self.sharing.strategy == "none" else None

    def _record(self, node: Node, parents: list[Node], entry: IndexEntry) -> None:
        index.record_block(self.conn, node.id, entry.sources, entry.predset, entry.dpredset,
                           entry.atoms, [p.id for p in parents])
        self.forget()
        self._candidates.clear()

    def restructure(self, node: Node, definition: dict, columns: list[Col],
                    new_parent: Node | None = None) -> Node:
        """Change an aggregate node in place — more aggregates (horizontal expansion), or
        computed from a finer aggregate (rerouting): its tables gain the new stored
        columns and lose the obsolete ones, and it is refilled from its parent. Its
        visible columns keep their names and values, so its consumers are unaffected."""
        parent = new_parent or self.load(node.parents[0])
        definition = growing(definition, parent)
        compiler = COMPILERS["aggregate"]
        old, new = node.spec, Model.of(definition)
        probe = sql.Identifier("argus_restructure_probe")
        self.conn.execute(sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS {} WITH NO DATA")
                          .format(probe, compiler.from_scratch(new, parent)))
        types = dict(self.conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'argus_restructure_probe'::regclass AND attnum > 0").fetchall())
        self.conn.execute(sql.SQL("DROP TABLE {}").format(probe))
        add = [c for c in new.stored if c not in old.stored]
        drop = [c for c in old.stored if c not in new.stored]
        for table in (node.hist, node.delta):
            changes = [sql.SQL("ADD COLUMN {} {}").format(sql.Identifier(c), sql.SQL(types[c]))
                       for c in add]
            changes += [sql.SQL("DROP COLUMN {}").format(sql.Identifier(c)) for c in drop]
            if changes:
                self.conn.execute(sql.SQL("ALTER TABLE {} {}").format(
                    table, sql.SQL(", ").join(changes)))
        self.forget()
        records.replace_columns(self.conn, node.id, [(c.name, c.expr) for c in columns])
        node = dataclasses.replace(node, parents=(parent.id,), definition=definition,
                                   columns=tuple(c.name for c in columns),
                                   exprs=tuple(c.expr for c in columns))
        node = dataclasses.replace(node, types=self._record_types(node))
        records.set_definition(self.conn, node.id, definition,
                               self._resigned(node, [parent], definition))
        if new_parent is not None:
            old_parent = self.load(self.conn.execute(
                "SELECT parent_id FROM argus_catalog.edges WHERE child_id = %s",
                (node.id,)).fetchone()[0])
            self.conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.Identifier(old_parent.hist_ref[0], parent_index_name(node.id))))
            self.forget()
            records.reparent(self.conn, node.id, new_parent, SEQUENCE_GAP)
            execute_all(self.conn, compiler.parent_index(node, parent))
        aux = [r[0] for r in self.conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
            (NETWORK_SCHEMA, f"n{node.id}\\_d%"))]
        self.conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(
            [node.hist] + [sql.Identifier(NETWORK_SCHEMA, t) for t in aux
                           if t != f"n{node.id}_delta"])))
        execute_all(self.conn, compiler.backfill(node, [parent]))
        self.conn.execute(sql.SQL("ANALYZE {}").format(node.hist))  # as a new node's
        self._store(node, [parent])
        return node

    def _store(self, node: Node, parents: list[Node]) -> None:
        store_blocks(self.conn, node, parents)
        self.compiled.add(node.id)

    def _index_join_keys(self, node: Node, left: Node, right: Node) -> None:
        """Index the parents' histories on the columns the join condition compares with
        the other side, so that a delta probes them instead of scanning."""
        self._record_indexes(node, indexes.join_keys(join_condition(node, [left, right]),
                                                     left, right))

    def _record_indexes(self, node: Node, keys: indexes.Keys) -> None:
        if node not in self.created or node.definition.get("indexes") is not None:
            return
        self.forget()
        records.note_indexes(self.conn, node.id, indexes.for_keys(self.conn, self.load, keys))

    def _top_index(self, node: Node, parent: Node, keys: list[str], terms) -> None:
        if node not in self.created:
            return
        made = indexes.top(self.conn, self.load, parent, keys, terms)
        if made is not None:
            self.forget()
            records.note_indexes(self.conn, node.id, [made])

    def origin(self, node: Node, columns: list[str]) -> tuple[Node, list[str]] | None:
        """The table a lazy join's `full` view reads `columns` from (the longest leading
        part of them one table holds), through its parents' views."""
        return indexes.table_of(self.conn, self.load, node, columns,
                                through=lambda n: virtual(n) or is_lazy(n))

    def index_of(self, parent: Node, columns: list[str]) -> str:
        return indexes.index(self.conn, parent, columns)


def _union_operands(plan: Plan) -> list[Plan]:
    if isinstance(plan, SetOp) and plan.op == "union_all":
        return _union_operands(plan.left) + _union_operands(plan.right)
    return [plan]


def _operand_key(node: Node, columns: list[str]) -> str:
    return f"{node.id}:{','.join(columns)}"


def _without(keyed: list, covered: list[str]) -> list | None:
    """`keyed` minus one entry per key of `covered` (a multiset), None if some key of
    `covered` is missing."""
    rest = list(keyed)
    for key in covered:
        match = next((k for k in rest if k[0] == key), None)
        if match is None:
            return None
        rest.remove(match)
    return rest


def may_be_view(definition: dict, exprs) -> bool:
    """An insert-only join whose history may be a view (Builder._view_of_join): an inner
    one whose condition and columns cannot fail on a row but by overflow."""
    return definition["join_type"] == "inner" and all(
        never_fails(e, overflow=True) for e in [definition["condition"], *exprs])


def growing(definition: dict, parent: Node) -> dict:
    """An aggregate's definition marked "grows" when its input only grows
    (nodes.aggregate.grows): an insert-only parent, or — computed from its books (a regroup,
    every aggregate "from" the parent's) — an aggregate over such an input; else
    "counted" when it keeps MIN/MAX books (argus.aggregates.Book)."""
    regroup = all(entry.regrouped for entry in entries(definition))
    grows = parent.insert_only or (parent.kind_of.groups and regroup
                                   and bool(parent.definition.get("grows")))
    out = {k: v for k, v in definition.items() if k not in ("grows", "counted")}
    if grows:
        out["grows"] = True
    elif Model.of(out).has_extremes:
        out["counted"] = True  # its MIN/MAX books keep how many rows are at the extreme
    return out
