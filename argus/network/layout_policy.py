"""Whether a new selection keeps its rows or is a view (and which joins may be views),
decided over what a network reads: the catalog's (network.layouts, over PostgreSQL's
estimates) or a network in memory's (network.memory, over its model of the rows).
Hooks: `load(node_id)`, `_layout()` (the layout settings), `share_of(parent, predicate,
base)` and `_expands_cleanly(parent, predicate, bound, exprs)`."""

from __future__ import annotations

from ..failures import never_fails
from ..frontend.lateral import without_expansions
from ..nodes import Node, delta_view, virtual


def may_be_view(definition: dict, exprs, parents: list[Node]) -> bool:
    """An insert-only join whose history may be a view (Layouts._view_of_join): an inner
    one whose condition and columns cannot fail on a row but by overflow."""
    types = {**parents[0].typed("t1"), **parents[1].typed("t2")}
    return definition["join_type"] == "inner" and all(
        never_fails(e, overflow=True, types=types) for e in [definition["condition"], *exprs])


class LayoutPolicy:
    def _stored(self, node: Node) -> Node:
        """The node whose table holds the rows of `node` (itself, unless it is a view of
        a selection's; a virtual join's rows are held by no one table: itself)."""
        while delta_view(node):
            node = self.load(node.parents[0])
        return node

    def views_kept_rows(self, parents: list[Node], definition: dict, exprs) -> bool:
        """A selection over an aggregate's groups or a Top-K's ranks is a view of them
        (their table holds its rows already)."""
        return not definition.get("temporal") and (
            self._over_groups(parents[0]) or self._over_top_k(parents[0], definition, exprs))

    def _over_groups(self, parent: Node) -> bool:
        """The parent is an aggregate's groups, or a view of them."""
        return self._stored(parent).kind_of.groups

    def _over_top_k(self, parent: Node, definition: dict, exprs) -> bool:
        """The parent is a Top-K window node (or a view of one), which keeps only rows
        that pass a selection of its ranks, and the selection cannot fail on a row (a
        view's error would surface when the answer is read)."""
        stored = self._stored(parent)
        return stored.kind_of.top_k(stored) is not None and all(
            never_fails(e, types=parent.typed())
            for e in filter(None, [definition.get("predicate"), *exprs]))

    def view_of_stream(self, parent: Node, definition: dict, layout: dict, exprs,
                       *rows: float | None) -> bool:
        """ARGUS's conditional materialization: a selection over a stream (through
        selections that keep no table) that passes most of the stream's rows is not
        worth a copy of them; its consumers read the stream's history through a view,
        by the stream's indexes. So is one over a virtual join (a narrower query
        sharing a loose chain: 2M rows copied of its 2.5M). Most: more than
        settings.virtual_selectivity, by PostgreSQL's estimate; a selection that expands
        rows (Nexmark q5's HOP windows: five per bid) passes more than all. Only a
        selection that cannot fail on a row: a view's error would surface when the
        answer is read, not in the cycle that isolates it — but for its set-returning
        calls, which each cycle evaluates over its new rows as it counts them, to their
        bound (select/count_view_bounded), and which fail on none of the rows already
        there (_expands_cleanly). `rows`: the new node's, where the network knows them
        (share_of's)."""
        predicate, expanding = definition.get("predicate"), definition.get("expands")
        types = parent.typed()
        if definition.get("temporal") or layout.get("virtual") or not all(
                never_fails(without_expansions(e) if expanding else e, types=types)
                for e in filter(None, [predicate, *exprs])):
            return False
        chosen, threshold, _, _ = self._layout()
        base = self._stored(parent)
        if chosen != "cost" or threshold is None or not (
                base.loaded or base.kind_of.joins and virtual(base)):
            return False
        return self.share_of(parent, predicate, base, *rows) > threshold and (
            not expanding or self._expands_cleanly(parent, predicate, layout.get("bound"),
                                                   exprs))

