"""A plan mapped to nodes, one method per plan shape, bottom-up: what each plan node
needs of the network (a node by signature, a block covered through the computation
index, aggregates regrouped), asked of the network it is mixed into — the catalog's
(network.builder.Builder) or one in memory (network.memory.MemoryNetwork). It reads
and writes nothing itself."""

from __future__ import annotations

import dataclasses
import itertools
import re

from sqlglot import exp

from ..aggregates import fixed_scale
from ..errors import UnsupportedQueryError
from ..frontend.grouping import HOLISTIC
from ..frontend.lateral import expands
from ..frontend.temporal import classify, clock_conjuncts
from ..mqo import regroup
from ..mqo.blocks import describe, is_spj, substitute
from ..mqo.order import Tree
from ..mqo.sharing import BlockBuilder
from ..nodes import Node
from ..nodes.window import reads_parent_partitions, suffix as window_suffix, top_order
from ..plan import (Aggregate, Col, Distinct, Join, Plan, Recursive, Scan, Select, SetOp,
                    Window)
from ..trees import DIALECT, tree_of
from .setops import SetOps


def _t1(column: str) -> str:
    """A column of the parent a node reads, as its expressions name it: "t1"."c"."""
    return exp.column(column, table="t1", quoted=True).sql(DIALECT)


# a type whose every value has one scale: numeric(p,s) as format_type spells it, integers
_FIXED_SCALE = re.compile(r"numeric\(\d+,(\d+)\)|smallint|integer|bigint()")


def _category(pg_type: str) -> str:
    """How an aggregate keeps the sums of an argument of this type (argus.aggregates)."""
    return {"smallint": "int", "integer": "int", "bigint": "int8", "numeric": "numeric",
            "real": "float4", "double precision": "float8"}.get(pg_type, "other")


class Mapping(SetOps):
    """Plans to nodes (mixed into a network: see the module's docstring). The network
    holds `names` (plan -> its columns -> node columns), `_memo` (plan -> node),
    `constants` (how PostgreSQL reads constants; None: not asked), `join_orders`,
    `replan`, `sharing`, and answers the methods these call."""

    # the rows a recursion, a set-returning function of the data or a re-run may give in
    # a statement (nodes.base.bounded): max_query_state at the answer's width; None: any
    row_bound: int | None = None

    def _private_to(self, private: bool = False) -> str | None:
        """The one query a node is for, that no other may find (sharing "none", or joins
        when join sharing is off); None: anyone's."""
        return self.query if private or self.sharing.strategy == "none" else None

    def _bound(self) -> dict:
        return {} if self.row_bound is None else {"bound": self.row_bound}

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
        if self.constants is not None and self.constants.fetch():  # constants PostgreSQL
            block = block_of()  # had to read: again, with them
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
        columns = tuple(Col(c, _t1(c)) for c in dict.fromkeys(self.columns_of(plan.input)))
        self.names[plan] = self.names[plan.input]
        return self.ensure("distinct", [parent], columns, {}, parent.insert_only)

    def _declared_scales(self, parent: Node, args: list[str]) -> dict[str, str]:
        """"numeric:<scale>" for the arguments whose every value has one scale: a
        column of the parent declared with it (numeric(12,2)), or arithmetic that fixes
        it (l_extendedprice * (1 - l_discount)): their sums need no largest scale kept
        (argus.aggregates)."""
        scales = {c: int(m.group(1) or 0) for c, t in zip(parent.columns, parent.types)
                  if (m := _FIXED_SCALE.fullmatch(t))}
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
            passed = {tree_of(c.expr) for c in columns}
            read = sorted({c.name for col in columns
                           for c in tree_of(col.expr).find_all(exp.Column)
                           if c.table == "t1" and exp.column(c.name, table="t1", quoted=True)
                           not in passed})
            columns += tuple(Col(f"argus_r{i}", _t1(name)) for i, name in enumerate(read))
        node = self.ensure("window", [parent], columns, definition, False)
        plain = {_t1(c): c for c in parent.columns}
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
        may take one band window of them to imply a wider one. (The network's
        `time_columns`: a source's.)"""
        if node.loaded:  # (a table's rows come from the application: stream.is_table)
            return self.time_columns(node) if node.insert_only else frozenset()
        if not node.kind_of.selects or len(node.parents) != 1:
            return frozenset()
        passed = {_t1(c): c for c in self._finite(self.load(node.parents[0]))}
        return frozenset(c for c, e in zip(node.columns, node.exprs) if e in passed)

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
