"""Incremental multiple-query optimization for select-project-join blocks (ARGUS §5.2).

Given a query's block, find what the network already computes and add only the rest:

- **sharing-selection** (the default): among the connected subsets of the query's
  instances, from the largest down, find indexed nodes that hold every row the subset
  needs (equal or weaker PredSets, any assignment of STAs), and start from the one with
  the fewest rows; then join the remaining instances one at a time.
- **match-plan**: the same, but only for the subsets the query's own plan joins.
- **none**: every node is the query's own.

A node chosen though it is less selective than needed is not extended by a selection
of its own: its residual conditions ride along into the next join (or a final
selection), as in ARGUS. Each single instance becomes the exact selection node of its
local conditions, shared when equal, built from the smallest node that subsumes it
otherwise. A shared node lacking a column the query needs is enriched with it
(projection enrichment) instead of being built again.
"""

from __future__ import annotations

from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlglot import exp

from . import order
from .blocks import (Block, Budget, Cond, Match, atoms_of, column_name, connected_subsets,
                     fresh_name, matches, render, rename_instances)
from .order import Estimates, Tree
from .replan import observed
from ..frontend.canon import PredSet, column_atom, map_atom, map_clause
from ..frontend.cheap_first import cheap_first
from ..plan import Col
from ..frontend.relations import short
from ..trees import DIALECT

if TYPE_CHECKING:  # the optimizer reads nodes; it does not depend on how they compile
    from ..nodes import Node
    from .protocol import Network

STRATEGIES = ("selection", "match-plan", "none")


@dataclass(frozen=True)
class Sharing:
    """How registration shares: strategy, and switches that exist to measure what each
    technique is worth (the ARGUS thesis' Table 1)."""

    strategy: str = "selection"
    canonicalize: bool = True  # canonical literals and subsumption (off: exact text)
    join_sharing: bool = True  # share join nodes (off: only selections are shared)
    infer_bounds: bool = True  # transitivity inference (off: only the bounds written)

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"sharing must be one of {', '.join(STRATEGIES)}, "
                             f"not {self.strategy!r}")

    @classmethod
    def of(cls, value: Sharing | str | None) -> Sharing:
        if isinstance(value, Sharing):
            return value
        return cls(value or "selection")


@dataclass(frozen=True)
class IndexEntry:
    """What a new selection or join node computes, for the computation index."""

    sources: tuple[int, ...]
    predset: PredSet
    dpredset: PredSet
    atoms: Mapping[str, str]  # node column -> atom over the node's STAs


@dataclass
class Part:
    """A node that computes the query's instances `subset`, except `residual`."""

    node: Node
    subset: frozenset[int]
    sta: dict[int, int]  # query instance -> the node's STA
    residual: list[Cond] = field(default_factory=list)

    def node_atom(self, atom: str) -> str:
        return map_atom(atom, self.sta)


class BlockBuilder:
    """Covers one block with nodes, through the network's `protocol.Network` methods."""

    def __init__(self, builder: Network, block: Block) -> None:
        self.builder = builder
        self.block = block
        self.sharing: Sharing = builder.sharing
        self.outputs = {name: e for name, e in block.outputs}
        self.chosen: tuple[Tree, list[Tree]] | None = None  # by cost: the tree, alternatives
        self.estimates: Estimates | None = None
        self.answer: Match | None = None  # a re-plan's: the own node holding the answer
        self.budget = Budget()  # (blocks.MAX_ASSIGNMENTS over all its matches)

    # -- the plan ------------------------------------------------------------------

    def build(self) -> tuple[object, dict[str, str]]:
        """The node computing the block, and where each of the plan's columns is in it."""
        self.estimates = self.builder.estimates(self.block)
        if self.estimates is not None:
            tree = self._costed(self.estimates)
        elif self.builder.replan is not None:  # (a prediction's block of one source)
            tree = self.builder.replan.alone(self.block.instances)
        else:
            tree = self._heuristic()
        return self.finish(self._part(tree))

    def _heuristic(self) -> Tree:
        """ARGUS's plan: the largest subset a shared node computes (the fewest rows
        among them), then the query's own left-deep order (_join_order)."""
        self.order = self._join_order()
        cover = self._best_cover()
        current = (Tree(frozenset(cover.mapping.values()), 0, 0, cover=cover) if cover
                   else Tree(frozenset({self.order[0]}), 0, 0))
        remaining = [i for i in self.order if i not in current.subset]
        while remaining:
            linked = [i for i in remaining if self.block.connected(current.subset | {i})]
            nxt = linked[0] if linked else remaining[0]
            remaining.remove(nxt)
            current = Tree(current.subset | {nxt}, 0, 0, current, Tree(frozenset({nxt}), 0, 0))
        return current

    def _costed(self, estimates: Estimates) -> Tree:
        """The cheapest tree by the Rete cost (argus.mqo.order), reusing shared nodes
        for the subsets they compute (match-plan: only the subsets of the tree the
        query would have alone)."""
        connected = self.block.connected
        subsets: list[frozenset[int]] = []
        replan = self.builder.replan
        if replan is not None:  # (every subset: its own nodes are found among them)
            subsets = [s for size in range(len(self.block.sources), 1, -1)
                       for s in connected_subsets(self.block, size)]
        elif self.sharing.strategy == "match-plan" and self.sharing.join_sharing:
            alone, _ = order.best(estimates, connected)
            subsets = [t.subset for t in alone.joins()]
        elif self.sharing.strategy != "none" and self.sharing.join_sharing:
            subsets = [s for size in range(len(self.block.sources), 1, -1)
                       for s in connected_subsets(self.block, size)]
        covers = {}
        for subset in subsets:
            found = self._matches(subset)
            if found:
                covers[subset] = [(m, m.node.rows) for m in sorted(found, key=_cost)]
        if replan is not None:
            self.estimates = observed(self.builder, self.block, estimates,
                                      lambda i: self._matches(frozenset({i})))
            return self._replanned(replan, self.estimates, covers)
        tree, alternatives = order.best(estimates, connected, covers)
        self.chosen = (tree, alternatives)
        return tree

    def _replanned(self, replan, estimates: Estimates, covers) -> Tree:
        """A registered query planned again (argus.adapt): its own nodes
        (replan.hidden) are costed like any join, not reused for free, and what they
        compute it keeps computing itself; with the shared nodes it uses they form the
        layout it has."""
        def nodes(found, wanted) -> list:
            return [(m, rows) for m, rows in found if wanted(m.node.node_id)]

        whole = nodes(covers.get(self.block.instances, []), replan.hidden.__contains__)
        exact = [m for m, _ in whole if not m.residual]  # (exactly the block's rows)
        # the nodes that make the block's rows now, its own and shared: those under its
        # answer, where it has one (another block of the query, a set operation's other
        # branch, may compute some of its instances too, which would pass for its
        # layout: found by helpers, a UNION migrated once was then "the layout it has")
        under = (frozenset(i for i, _ in self.builder.ancestors(exact[0].node.node_id))
                 if exact else None)

        def now(n: int) -> bool:
            return under is None or n in under

        mine = {s for s, found in covers.items()
                if nodes(found, lambda n: n in replan.hidden and now(n))}
        used = {s: shared[:1] for s, found in covers.items()
                if (shared := nodes(found, lambda n: n in replan.uses - replan.hidden
                                    and now(n)))}
        shares = self.sharing.strategy != "none" and self.sharing.join_sharing
        free = {s: shared for s, found in covers.items()
                if (shared := nodes(found, lambda n: n not in replan.hidden)) and shares
                and (s not in mine or s in used or nodes(shared, replan.fresh.__contains__))}
        self.answer = exact[0] if exact and replan.mode != "keep" else None
        estimates = dataclasses.replace(estimates, growth=replan.growth, existing={
            s: bool(self.builder.load(own[0][0].node.node_id).layout.get("virtual"))
            for s, found in covers.items()
            if (own := nodes(found, replan.hidden.__contains__))})
        tree, alternatives = order.best(estimates, self.block.connected, free)
        tree = replan.choose(estimates, frozenset(mine), used, tree, alternatives,
                             float(whole[0][1]) if whole else None)  # (the answer's rows)
        self.chosen = (tree, alternatives)
        return tree

    def _part(self, tree: Tree) -> Part:
        if tree.cover is not None:
            match = tree.cover
            inverse = {q: j for j, q in match.mapping.items()}
            return Part(self.builder.load(match.node.node_id), tree.subset, inverse,
                        list(match.residual))
        if tree.left is None:
            part = self.leaf(min(tree.subset))
        else:
            part = self.join(self._part(tree.left), self._part(tree.right),
                             table=self.builder.replan is not None and not tree.view
                             and tree.subset != self.block.instances)
        sources = {self.block.sources[i - 1] for i in tree.subset}
        if self.estimates is not None and (tree.left is not None or part.node.id not in sources):
            self.builder.estimated(part.node, tree.rows, tree.rate,
                                   {s: self.estimates.inflow.get(s, 0.0) for s in sources})
        return part

    def _join_order(self) -> list[int]:
        """The query's own left-deep join order (ARGUS orders joins from statistics):
        from the instance whose local conditions leave the fewest rows, as PostgreSQL
        estimates them, each next the connected instance that leaves the fewest."""
        instances = sorted(self.block.instances)
        if len(instances) == 1:
            return instances
        rows = {i: self.builder.estimate(self.block.sources[i - 1], i,
                                         self.block.within(frozenset({i}))) for i in instances}
        order = [min(instances, key=lambda i: (rows[i], i))]
        while len(order) < len(instances):
            rest = [i for i in instances if i not in order]
            linked = [i for i in rest if self.block.connected(frozenset(order) | {i})]
            order.append(min(linked or rest, key=lambda i: (rows[i], i)))
        return order

    def _subsets(self) -> list[frozenset[int]]:
        if self.sharing.strategy == "none" or not self.sharing.join_sharing:
            return []
        n = len(self.block.sources)
        if self.sharing.strategy == "match-plan":  # the prefixes of the query's own plan
            return [frozenset(self.order[:size]) for size in range(n, 1, -1)]
        return [s for size in range(n, 1, -1) for s in connected_subsets(self.block, size)]

    def _best_cover(self) -> Match | None:
        best: Match | None = None
        size = None
        for subset in self._subsets():
            if size is not None and len(subset) < size:
                break  # the largest covered subsets win; among them, the fewest rows
            for match in self._matches(subset):
                size = len(subset)
                if best is None or _cost(match) < _cost(best):
                    best = match
        return best

    def _matches(self, subset: frozenset[int]) -> list[Match]:
        sources = [self.block.sources[i - 1] for i in sorted(subset)]
        shapes = {lit.shape for cond in self.block.within(subset)
                  for clause in cond.predset for lit in clause}
        found = []
        for node in self.builder.candidates(sources, shapes):
            # a node whose conditions may fail on a row serves only a query of the same
            # conditions: one that would filter its rows further fails with it on rows its
            # own conditions keep out (`v <> 0 AND 10 / v > 1` read from `10 / v > 1`'s
            # node, a helper)
            found += [m for m in matches(node, self.block, subset, self.budget)
                      if not (m.residual and node.may_fail)]
        return found

    # -- parts -----------------------------------------------------------------------

    def leaf(self, i: int) -> Part:
        """The exact selection of instance i's local conditions."""
        single = frozenset({i})
        source = self.builder.load(self.block.sources[i - 1])
        local = self.block.within(single)
        if not local:
            return Part(source, single, {i: 1})
        shared = self._matches(single) if self.sharing.strategy != "none" else []
        if shared:  # (the source's rows are read only to compare: a prediction's may be unfilled)
            best = min([Match(self.builder.source_index(source), {1: i}, tuple(local)),
                        *shared], key=_cost)
            part = Part(self.builder.load(best.node.node_id), single, {i: 1},
                        list(best.residual))
        else:
            part = Part(source, single, {i: 1}, list(local))
        if not part.residual:
            return part
        return self.select(part, self._needed(single, []))

    def join(self, left: Part, right: Part, table: bool = False) -> Part:
        subset = left.subset | right.subset
        applied = left.residual + right.residual + [
            c for c in self.block.within(subset)
            if not c.instances <= left.subset and not c.instances <= right.subset]
        keep = self._needed(subset, [])
        condition_atoms = set().union(*(atoms_of(c.sql) for c in applied))
        self._ensure(left, {a for a in keep | condition_atoms if _instance(a) in left.subset})
        self._ensure(right, {a for a in keep | condition_atoms if _instance(a) in right.subset})
        # enriching one side may have enriched the other, or a node under it (one shared
        # node under both, a bushy tree; a helper's 7-way self-join): both as they are now
        left.node, right.node = self.builder.load(left.node.id), self.builder.load(right.node.id)
        width = len(self.builder.sources_of(left.node))
        sta = dict(left.sta) | {q: width + k for q, k in right.sta.items()}
        where = {a: ("t1", self.builder.column(left.node, left.node_atom(a)))
                 for a in keep | condition_atoms if _instance(a) in left.subset}
        where |= {a: ("t2", self.builder.column(right.node, right.node_atom(a)))
                  for a in keep | condition_atoms if _instance(a) in right.subset}
        condition = " AND ".join(f"({render(c.sql, where)})" for c in applied) or "TRUE"
        columns, atoms = self._columns(sorted(keep), sta, where, len(subset))
        entry = IndexEntry(
            tuple(self.builder.sources_of(left.node)) + tuple(self.builder.sources_of(right.node)),
            self._predset(subset, sta), self._predset_of(applied, sta), atoms)
        copy = self._copied(sta, atoms) if subset == self.block.instances else None
        node = self.builder.make_join(left.node, right.node, condition, columns, entry, copy,
                                      table)
        return Part(node, subset, sta)

    def _copied(self, sta: dict[int, int], atoms: dict[str, str]
                ) -> tuple[int, dict[str, str]] | None:
        """A re-plan's new join computing the whole block holds the rows the old one
        does (the block's answer): it is filled from it, column by column, not joined
        again. (the old node, new column -> old column), or None if the old one lacks
        a column."""
        if self.answer is None:
            return None
        old = self.builder.atoms(self.builder.load(self.answer.node.node_id))
        back = {node_sta: q for q, node_sta in sta.items()}
        to_old = {q: node_sta for node_sta, q in self.answer.mapping.items()}
        columns = {name: old.get(map_atom(map_atom(atom, back), to_old))
                   for name, atom in atoms.items()}
        if None in columns.values():
            return None
        return self.answer.node.node_id, columns

    def select(self, part: Part, keep: set[str], computed: dict[str, exp.Expr] | None = None
               ) -> Part:
        """A selection node over part.node applying its residual conditions; it keeps
        the atoms `keep` and computes `computed` (plan column -> expression)."""
        computed = computed or {}
        atoms = keep | set().union(*(atoms_of(c.sql) for c in part.residual),
                                   *(atoms_of(e) for e in computed.values()))
        self._ensure(part, atoms)
        where = {a: ("t1", self.builder.column(part.node, part.node_atom(a))) for a in atoms}
        predicate = cheap_first(" AND ".join(f"({render(c.sql, where)})" for c in part.residual)
                                or None, part.node.typed())
        columns, node_atoms = self._columns(sorted(keep), part.sta, where, len(part.subset))
        taken = {c.name for c in columns}
        for name, e in computed.items():
            column = fresh_name(short(name), taken)
            columns.append(Col(column, render(e, where)))
            node_atoms[column] = rename_instances(e, part.sta).sql(DIALECT)
        entry = IndexEntry(tuple(self.builder.sources_of(part.node)),
                           self._predset(part.subset, part.sta),
                           self._predset_of(part.residual, part.sta), node_atoms)
        node = self.builder.make_select(part.node, predicate, columns, entry)
        return Part(node, part.subset, part.sta)

    def finish(self, part: Part) -> tuple[object, dict[str, str]]:
        """Apply what is left, compute the outputs the node lacks, name the outputs."""
        plain = {n: e for n, e in self.outputs.items() if isinstance(e, exp.Column)}
        computed = {n: e for n, e in self.outputs.items() if n not in plain}
        have = self.builder.atoms(part.node)
        missing = {n: e for n, e in computed.items()
                   if rename_instances(e, part.sta).sql(DIALECT) not in have}
        keep = {e.sql(DIALECT) for e in plain.values()}
        if part.residual or missing:
            part = self.select(part, keep, computed)
        else:
            self._ensure(part, keep)
        have = self.builder.atoms(part.node)
        names = {n: have[part.node_atom(e.sql(DIALECT))] for n, e in plain.items()}
        names |= {n: have[rename_instances(e, part.sta).sql(DIALECT)]
                  for n, e in computed.items()}
        return part.node, names

    # -- helpers -----------------------------------------------------------------------

    def _needed(self, subset: frozenset[int], residual: list[Cond]) -> set[str]:
        """Atoms of `subset` still needed above a node computing it: by the outputs, by
        conditions linking it to other instances, and by its residual. A node needs one
        column at least (`SELECT 1 FROM … WHERE EXISTS (SELECT 1 FROM r …)` reads none):
        then the first column of its first instance."""
        needed = set().union(*(atoms_of(e) for e in self.outputs.values()))
        for cond in self.block.conds:
            if cond.instances & subset and not cond.instances <= subset:
                needed |= atoms_of(cond.sql)
        for cond in residual:
            needed |= atoms_of(cond.sql)
        needed = {a for a in needed if _instance(a) in subset}
        if not needed:
            first = min(subset)
            source = self.builder.load(self.block.sources[first - 1])
            needed = {column_atom(first, source.columns[0])}
        return needed

    def _ensure(self, part: Part, atoms: set[str]) -> None:
        missing = {part.node_atom(a) for a in atoms} - set(self.builder.atoms(part.node))
        if missing:
            part.node = self.builder.enrich(part.node, missing)

    def _columns(self, atoms: list[str], sta: dict[int, int], where, width: int):
        columns, names = [], {}
        taken: set[str] = set()
        for atom in atoms:
            node_atom = map_atom(atom, sta)
            name = fresh_name(column_name(node_atom, width), taken)
            alias, column = where[atom]
            columns.append(Col(name, exp.column(column, table=alias, quoted=True).sql(DIALECT)))
            names[name] = node_atom
        return columns, names

    def _predset(self, subset: frozenset[int], sta: dict[int, int]) -> PredSet:
        return self._predset_of(self.block.within(subset), sta)

    @staticmethod
    def _predset_of(conds: list[Cond], sta: dict[int, int]) -> PredSet:
        return frozenset(map_clause(c, sta) for cond in conds for c in cond.predset)


def _cost(match: Match) -> tuple:
    """ARGUS's cost of sharing a node: the rows left to process (its size)."""
    return (match.node.rows, len(match.residual), -len(match.node.predset), match.node.node_id)


def _instance(atom: str) -> int:
    return int(atom.split(".", 1)[0].strip('"')[1:])
