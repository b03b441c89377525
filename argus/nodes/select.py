"""Selection and projection nodes, temporal ones included."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql
from sqlglot import exp

from .. import abi
from ..mqo.blocks import substitute
from ..frontend.temporal import Bound, at_previous_clock, clock_once
from ..templates import render
from ..trees import DIALECT, qualified, tree_of
from . import expiry
from .base import (Kind, Probe, register_kind, Node, SIGN_ID, Step, T1, add_hash, all_rows,
                   bag_flush, bounded, cols, create_delta, expr_hash, passed_on, row_hash,
                   signed_slots, var, virtual)


@dataclass(frozen=True)
class SelectSpec:
    """A selection's definition."""

    predicate: str | None = None  # over t1; None: every row (a projection)
    temporal: bool = False  # the predicate reads the clock
    monotone: bool = False  # temporal, and every conjunct reading the clock a lower bound
    bounds: tuple[Bound, ...] = ()  # those lower bounds: what purging and indexes use
    clock_conjuncts: tuple[str, ...] = ()  # the predicate's conjuncts that read the clock

    @classmethod
    def of(cls, d: dict) -> SelectSpec:
        return cls(d.get("predicate"), bool(d.get("temporal")), bool(d.get("monotone")),
                   tuple(Bound(*b) for b in d.get("bounds", [])),
                   tuple(d.get("clock_conjuncts", [])))


class SelectCompiler:
    """Selection and projection. A temporal selection (its predicate reads the clock)
    also retracts its rows that expire as the clock rises and, unless its predicate is
    a lower bound, takes in old parent rows that start to satisfy it."""

    def _slots(self, node: Node) -> dict:
        predicate = clock_once(node.spec.predicate or "TRUE")
        return {**signed_slots(node), "named_exprs": node.named_expr_list,
                "predicate": sql.SQL(predicate)}

    @staticmethod
    def own(node: Node, text: str) -> str:
        """SQL over the parent's columns (t1) as SQL over the node's own history, whose
        columns pass them through under names of their own (a temporal filter keeps
        the columns it re-reads as the clock moves)."""
        passed = {e: n for n, e in zip(node.columns, node.exprs)}
        mapping = {}
        for column in tree_of(text).find_all(exp.Column):
            if column.table == "t1":
                mine = passed.get(sql.Identifier("t1", column.name).as_string(None))
                if mine is None:
                    raise ValueError(f"node {node.id} does not keep column {column.name!r}")
                mapping[column.name] = exp.column(mine, table="t1", quoted=True)
        return substitute(text, {"t1": mapping}).sql(DIALECT)

    def _temporal(self, node: Node, parents: list[Node]) -> list[Step]:
        spec = node.spec
        moved = abi.v(abi.CLOCK_MOVED)
        if spec.monotone:
            expired = " OR ".join(b.failed() for b in spec.bounds)
        else:
            expired = "NOT coalesce(({}), false)".format(") AND (".join(spec.clock_conjuncts))
        steps = [Step(render("node/expire", delta=node.delta, hist=node.hist,
                             columns=node.column_list, t1_columns=cols(node.columns, "t1"),
                             expired=sql.SQL(clock_once(self.own(node, expired))), t1=T1,
                             sign=SIGN_ID),
                      moved, sign=-1)]
        if not spec.monotone:
            slots = self._slots(node)
            steps.append(Step(render("select/enter", delta=node.delta, parent=parents[0].hist,
                                     previous=sql.SQL(clock_once(
                                         at_previous_clock(spec.predicate))),
                                     **{**slots, "hash_expr": row_hash(node.columns, "s")}),
                              moved))
        return steps

    def create(self, node, parents):
        if virtual(node):
            return self.views(node, parents)
        indexes = [sql.SQL("CREATE INDEX ON {} ({})").format(node.hist, sql.Identifier(c))
                   for c in expiry.bound_columns(node)]
        return [render("select/create", hist=node.hist, named_exprs=node.named_expr_list,
                       parent=parents[0].hist, t1=T1),
                *add_hash(node, indexed=not expiry.window(node, parents[0])), *indexes,
                create_delta(node)]

    def views(self, node: Node, parents: list[Node]) -> list[sql.Composed]:
        """A virtual selection's history and delta (select/create_view)."""
        parent = parents[0]
        whole = parent.kind_of.row_hashed(parent) and [
            passed_on(node, c) for c in node.columns] == [(0, c) for c in parent.columns]
        slots = {"named_exprs": node.named_expr_list,  # (a parent's whole rows: its hash)
                 "hash": sql.SQL("{}.argus_hash").format(T1) if whole else expr_hash(node.exprs),
                 "predicate": self._slots(node)["predicate"], "t1": T1}
        return [render("select/create_view", view=node.hist, parent=parent.hist,
                       sign=sql.SQL(""), **slots),
                render("select/create_view", view=node.delta_table, parent=parent.delta,
                       sign=sql.SQL("{}.{}, ").format(T1, SIGN_ID), **slots)]

    def count_view(self, node: Node, parents: list[Node]) -> sql.Composed:
        """What a virtual selection's delta holds this cycle, counted: its parent's
        counts where it passes every row; where its set-returning calls expand rows, the
        rows they make counted to one past their bound over the parent's delta, without
        the view's row hash (which holds the calls, so PostgreSQL computes it for every
        row it counts: Nexmark q5's five HOP windows a bid, 15-25 ms a 5,000-event
        cycle, half of it hashing)."""
        parent = parents[0]
        if passes_every_row(node, parent):
            return render("select/count_parent", parent=sql.Literal(parent.id))
        bound = node.layout.get("bound")
        if bound is None:
            return render("select/count_view", delta=node.delta, sign=SIGN_ID)
        return render("select/count_view_bounded", parent=parent.delta, t1=T1, sign=SIGN_ID,
                      named_exprs=node.named_expr_list, predicate=self._slots(node)["predicate"],
                      limit=sql.Literal(bound + 1), bound=sql.Literal(bound))

    def backfill(self, node, parents):
        if virtual(node):
            return []
        name, bound = self._bounded(node, "select/backfill")
        return [render(name, hist=node.hist, parent=parents[0].hist, **bound,
                       **self._slots(node))]

    def evaluate(self, node, parents):
        if virtual(node):
            return []  # its delta is a view; node_block counts it
        name, bound = self._bounded(node, "select/delta")
        steps = [Step(render(name, delta=node.delta, parent_delta=parents[0].delta, **bound,
                             **self._slots(node)), all_rows(parents[0]), dynamic=False,
                      sign=1 if parents[0].insert_only else None)]
        if node.spec.temporal:
            steps += self._temporal(node, parents)
        return steps

    def flush(self, node, parents):
        if virtual(node):
            return []
        if expiry.window(node, parents[0]):  # (its only retractions: rows that left)
            expired = " OR ".join(b.failed() for b in node.spec.bounds)
            return expiry.flush(node, clock_once(self.own(node, expired)), ["argus_hash"])
        if node.insert_only or not self.keyed(node, parents[0]):
            return bag_flush(node)
        when = sql.SQL("{} > 0").format(var(node.id))
        slots = {"hist": node.hist, "delta": node.delta, "sign": SIGN_ID,
                 "columns": node.column_list, "h_columns": cols(node.columns, "h"),
                 "d_columns": cols(node.columns, "d")}
        return [Step(render("select/flush_keyed_retract", **slots), when),
                Step(render("select/flush_keyed_insert", **slots), when, dynamic=False)]

    @staticmethod
    def _bounded(node: Node, template: str) -> tuple[str, dict]:
        """The template, or its bounded form where the node expands rows (a
        set-returning function of the data: `generate_series(1, x)` may give any number)
        and was built with a bound (nodes.base.bounded)."""
        if node.layout.get("bound") is None:
            return template, {}
        with_bound, read = bounded(node, sql.SQL("argus_rows"))
        return f"{template}_bounded", {"bounded": with_bound, "read": read}

    @staticmethod
    def keyed(node: Node, parent: Node) -> bool:
        """Its rows are distinct and it retracts only rows it holds: a non-temporal
        selection (HAVING) over an aggregate, passing the group keys through."""
        return (parent.kind == "aggregate" and not node.spec.temporal
                and all(qualified("t1", g) in node.exprs for g, _ in parent.spec.groups))


KIND = register_kind(Kind(
    "select", SelectSpec.of, SelectCompiler(),
    describe=lambda node: ([f"where {node.spec.predicate}"] if node.spec.predicate
                           else ["projection"]),
    probe=lambda node, parents: [Probe(T1, 0, [node.spec.predicate or "TRUE", *node.exprs])],
    selects=True, symbol="σ", clock_driven=lambda node: node.spec.temporal, row_hashed=virtual,
    slides=lambda node: node.spec.temporal and node.spec.monotone, copies=passed_on,
    shard_keys=lambda node: node.columns if node.insert_only else ()))


def passes_every_row(node: Node, parent: Node) -> bool:
    """A virtual selection of a rank ≤ k over a window node that keeps only the rows
    ranked within k (its Top-K): every row passes, so its changes are its parent's, and
    so are their counts."""
    keep = parent.kind_of.top_k(parent)
    if not keep or node.spec.predicate is None:
        return False
    tree = tree_of(node.spec.predicate)
    tree = tree.this if isinstance(tree, exp.Paren) else tree
    if not isinstance(tree, exp.LTE | exp.LT) \
            or tree.this != exp.column(keep[0], table="t1", quoted=True) \
            or not (isinstance(tree.expression, exp.Literal) and tree.expression.is_int):
        return False
    return int(tree.expression.name) - isinstance(tree, exp.LT) >= keep[1]
