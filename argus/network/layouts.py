"""How and where a node keeps its rows: a table, a view (ARGUS's conditional
materialization of a selection that passes most of a stream, Zhu's virtual joins large
next to their inputs), a deferred join whose changes are computed only when read, and
on Citus, on the workers or on the coordinator. The builder decides these as it makes
a node (Builder._decide) and changes them when a node gains or loses readers.
"""

from __future__ import annotations

import dataclasses

import psycopg
from psycopg import sql

from ..errors import UnsupportedQueryError
from ..nodes import COMPILERS, SIGN_ID, Node, virtual
from ..nodes.join import guards, one_sided
from . import records, shards
from .layout_policy import LayoutPolicy, may_be_view
from .reads import evaluate_held, network_bytes
from .stored import execute_all, store_blocks


class Layouts(LayoutPolicy):
    """The builder's layout decisions and changes (network.builder.Builder mixes it in)."""

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
        self.created, _ = shards.place_all(self.conn, self.created, self.load,
                                           self.sharded(), local)
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

    def _expands_cleanly(self, parent: Node, predicate: str | None, bound: int | None,
                         exprs) -> bool:
        """The set-returning calls evaluated over every row the parent holds, without
        an error (HOP's to_timestamp fails at the first timestamp PostgreSQL has) and
        within their bound: else a table, whose backfill says which."""
        self.ready(parent)
        try:
            rows = evaluate_held(self.conn, exprs, parent.hist, predicate, bound)
        except psycopg.DataError:
            return False
        return bound is None or rows <= bound

    def _layout(self) -> tuple[str, float | None, float | None, int | None]:
        return self._once(("layout",), lambda: self.conn.execute(
            "SELECT layout, virtual_selectivity, virtual_join_growth, state_budget "
            "FROM argus_catalog.settings").fetchone())

    def _view_of_join(self, parents: list[Node], definition: dict, names, exprs,
                      growth: bool = True) -> int | None:
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
        (its delta, or a deferred join's guards). `growth`: False for a join a re-plan
        priced as a table (mqo.order.Estimates.is_view weighs its new rows too); the
        budget holds for it still. The rows past which it is to be a view (its backfill
        stops there), or None."""
        layout, _, growth_limit, budget = self._layout()
        growth_limit = growth_limit if growth else None
        if layout != "cost" or (growth_limit, budget) == (None, None) \
                or not may_be_view(definition, exprs, parents) or self.sharded():
            return None  # (on Citus: a join's view over distributed histories is read
            # through set operations Citus 13 cannot plan, docs/scale-out.md)
        limits = []
        for parent in parents:
            self.ready(parent)
        if growth_limit is not None:
            inputs = sum(r[0] for r in self.conn.execute(
                "SELECT hist_rows FROM argus_catalog.node_stats WHERE node_id = ANY(%s)",
                ([p.id for p in parents],)))
            limits.append(int(growth_limit * inputs) + 1)
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
        for parent in parents:
            self.ready(parent)
        return self.explain(sql.SQL("SELECT FROM {} AS t1 JOIN {} AS t2 ON {}").format(
            *(p.hist for p in parents), sql.SQL(definition["condition"])))["Plan Rows"]

    def _view_instead(self, node: Node, parents: list[Node]) -> Node:
        """The new join's table, filled up to its limit, gives way to a view."""
        self.conn.execute(sql.SQL("DROP TABLE {}").format(node.hist))
        return self._redefined(node, parents, virtual=True)

    def _redefined(self, node: Node, parents: list[Node], **changes: bool) -> Node:
        """A join whose layout changes (virtual, deferred): recorded, and its views made
        again to match."""
        node = dataclasses.replace(node, layout={**node.layout, **changes})
        records.set_layout(self.conn, node.id, node.layout)
        self.forget()
        execute_all(self.conn, COMPILERS["join"].views(node, parents))
        return node

    def defer(self, node: Node) -> Node:
        """A query's output that is a virtual join no node consumes: its delta is not
        computed by the cycles, its changes are when read (join/changes.sql). A join
        whose answer is many times its inputs gains as many changes per new row: a
        cycle computing them for no reader cost the loose chains most of theirs."""
        if not (node.kind_of.joins and virtual(node)) or "deferred" in node.layout:
            return node
        # a consumer reads its delta, or a query already registered does, through its
        # changes view (made deferred by a second query, the first's changes lost rows)
        if self.conn.execute(
                "SELECT 1 FROM argus_catalog.edges WHERE parent_id = %(n)s "
                "UNION ALL SELECT 1 FROM argus_catalog.queries WHERE output_node = %(n)s",
                {"n": node.id}).fetchone():
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

