"""Join order by cost: the binary join tree — bushy trees allowed (Zhu's Min-State) —
that propagates a cycle's new rows through a select-project-join block most cheaply.

The cost is the Rete rule's, per cycle, in row operations:
- a join of L and R probes R's history with each new row of L and L's with each of R's:
  by an index when an equality links them (PROBE per new row), else by reading the
  other side (SCAN per row of it);
- it writes each new row of its answer to its delta (WRITE) and, unless it is the
  block's top, into its history (FLUSH), which it then holds (its state).
The rows of a subset S of instances are estimated under independence: the product of
its instances' rows (after their local conditions) and of the selectivities of the
conditions within S. Its new rows per cycle are what each instance's new rows find in
the other instances' histories: sum over i of rate(i) · rows(S without i) · those
selectivities. Both depend only on S, not on the tree that computes S, so dynamic
programming over connected subsets finds the cheapest tree (exhaustive up to
`EXHAUSTIVE` instances; beyond, greedily joining the pair with the fewest new rows).

A subset that a shared node already computes costs nothing to reuse: its maintenance is
paid once, for all its users. Pure: argus.network supplies the numbers (PostgreSQL's
estimates; the rates the cycles observed).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .blocks import equality

PROBE, SCAN, WRITE, FLUSH = 1.0, 0.02, 1.0, 1.0  # row operations: see the docstring
EXHAUSTIVE = 8  # instances up to which every tree is considered
FALLBACK_SHARE = 0.01  # before any cycle: every source gains this share of its rows


@dataclass(frozen=True)
class Estimates:
    rows: Mapping[int, float]  # instance -> rows its local conditions leave
    rates: Mapping[int, float]  # instance -> of those, new per cycle
    links: Mapping[frozenset[int], float]  # instances conditions link -> selectivity
    keyed: frozenset[frozenset[int]] = frozenset()  # instance pairs an equality links
    inflow: Mapping[int, float] = field(default_factory=dict)  # source -> new rows/cycle
    # linked instances -> the selectivity new rows met in the last cycle, where it was
    # measured (a re-plan: the new rows may match unlike the history's)
    recent: Mapping[frozenset[int], float] = field(default_factory=dict)
    # a re-plan's: a new join holding more than `growth` times its inputs' rows is a
    # view of their join (settings.virtual_join_growth); `existing`: subsets nodes
    # already compute, and whether each is a view
    growth: float | None = None
    existing: Mapping[frozenset[int], bool] = field(default_factory=dict)
    # a re-plan's: the rows sliding windows hold now, where `rows` says what they will
    # hold once they have turned over (mqo.replan.observed)
    held: Mapping[int, float] = field(default_factory=dict)

    def as_held(self) -> Estimates | None:
        """These estimates with the windows as they are now (None: none is turning
        over)."""
        if not self.held:
            return None
        return dataclasses.replace(self, rows={**self.rows, **self.held}, held={})

    def fanout(self, new: frozenset[int], into: frozenset[int]) -> float:
        """The rows of `into` that one new row of `new` finds (the last cycle's
        selectivities where measured)."""
        linking = math.prod(self.recent.get(linked, s) for linked, s in self.links.items()
                            if linked <= new | into and not linked <= new
                            and not linked <= into)
        return self.rows_of(into) * linking

    def is_view(self, subset: frozenset[int], rows: float, inputs: float, rate: float,
                inflow: float) -> bool:
        """A join large next to its inputs, whose new rows are many next to theirs too:
        one that holds many rows but gains few each cycle is cheaper kept than probed
        through (issue 52's drift: r⋈s of 404k rows gaining 499 a cycle, as a view every
        new row of t probed both histories)."""
        if subset in self.existing:
            return self.existing[subset]
        return self.growth is not None and rows > self.growth * inputs \
            and rate > self.growth * inflow

    def rows_of(self, subset: frozenset[int]) -> float:
        return math.prod(self.rows[i] for i in subset) * self._selectivity(subset, {})

    def rate_of(self, subset: frozenset[int]) -> float:
        return sum(self.rates[i] * math.prod(self.rows[j] for j in subset - {i})
                   for i in subset) * self._selectivity(subset, self.recent)

    def _selectivity(self, subset: frozenset[int],
                     recent: Mapping[frozenset[int], float]) -> float:
        return math.prod(recent.get(linked, s) for linked, s in self.links.items()
                         if linked <= subset)

    def probed_by_key(self, left: frozenset[int], right: frozenset[int]) -> bool:
        return any(len(pair & left) == 1 and len(pair & right) == 1 for pair in self.keyed)


@dataclass(frozen=True)
class Tree:
    """How a subset of the block's instances is computed: one instance, a shared node
    (`cover`, opaque here), or the join of two trees. cpu and state: of the nodes the
    tree adds, with its top's; rows and rate: of its answer."""

    subset: frozenset[int]
    rows: float
    rate: float
    left: Tree | None = None
    right: Tree | None = None
    cover: object | None = None
    cpu: float = 0.0
    state: float = 0.0
    view: bool = False  # a view of its children's join (Estimates.is_view)

    @property
    def cost(self) -> tuple[float, float]:
        return (self.cpu, self.state)

    def joins(self) -> list[Tree]:
        """The joins the tree adds, bottom-up."""
        if self.left is None:
            return []
        return [*self.left.joins(), *self.right.joins(), self]

    def text(self, names: Callable[[int], str] = lambda i: f"i{i}") -> str:
        if self.cover is not None:
            return "[" + " ⋈ ".join(names(i) for i in sorted(self.subset)) + "]"
        if self.left is None:
            return names(min(self.subset))
        return f"({self.left.text(names)} ⋈ {self.right.text(names)})"


def leaf(est: Estimates, i: int) -> Tree:
    return Tree(frozenset({i}), est.rows[i], est.rates[i])


def covered(est: Estimates, subset: frozenset[int], cover: object, rows: float) -> Tree:
    """A shared node computing `subset` (perhaps more: `rows` it holds; its residual
    conditions ride into the join above)."""
    scale = max(rows, 1.0) / max(est.rows_of(subset), 1.0)
    return Tree(subset, max(rows, 1.0), est.rate_of(subset) * max(scale, 1.0), cover=cover)


def join(est: Estimates, left: Tree, right: Tree, top: bool = False,
         view: bool | None = None) -> Tree:
    """`view`: whether it is a view, if decided (else by Estimates.is_view)."""
    subset = left.subset | right.subset
    rows, rate = est.rows_of(subset), est.rate_of(subset)
    if est.probed_by_key(left.subset, right.subset):
        probes = (left.rate * _probe(est, right, left.subset)
                  + right.rate * _probe(est, left, right.subset))
    else:
        probes = SCAN * (left.rate * right.rows + right.rate * left.rows)
    if view is None:
        view = not top and est.is_view(subset, rows, left.rows + right.rows, rate,
                                       left.rate + right.rate)
    kept = not (top or view)
    cpu = probes + WRITE * rate + (FLUSH * rate if kept else 0.0)
    return Tree(subset, rows, rate, left, right, cpu=left.cpu + right.cpu + cpu,
                state=left.state + right.state + (rows if kept else 0.0), view=view)


def _probe(est: Estimates, into: Tree, new: frozenset[int]) -> float:
    """One new row of `new` probing `into` by a key: an index probe; into a view of a
    join, one into the child it is linked to, then one into the other child for each
    row found there."""
    if not into.view:
        return PROBE
    found = [est.fanout(new, child.subset) for child in (into.left, into.right)
             if est.probed_by_key(new, child.subset)]
    return PROBE * (1.0 + min(found, default=into.rows))


def best(est: Estimates, connected: Callable[[frozenset[int]], bool],
         covers: Mapping[frozenset[int], list[tuple[object, float]]] | None = None,
         ) -> tuple[Tree, list[Tree]]:
    """The cheapest tree over all of est.rows's instances, and the best alternatives
    (other splits at the top, cheapest first). `covers`: subset -> shared nodes
    computing it, with their rows."""
    covers = covers or {}
    instances = frozenset(est.rows)
    if len(instances) > EXHAUSTIVE:
        return _greedy(est, connected, covers), []
    table: dict[frozenset[int], list[Tree]] = {frozenset({i}): [leaf(est, i)]
                                               for i in instances}
    for size in range(2, len(instances) + 1):
        for subset in map(frozenset, itertools.combinations(sorted(instances), size)):
            if not connected(subset):
                continue
            top = subset == instances
            options = [covered(est, subset, c, rows) for c, rows in covers.get(subset, [])]
            first = min(subset)
            rest = sorted(subset - {first})
            for k in range(len(rest)):
                for others in itertools.combinations(rest, k):
                    one = frozenset({first, *others})
                    two = subset - one
                    if one in table and two in table:
                        options.append(join(est, table[one][0], table[two][0], top))
            if options:
                table[subset] = sorted(options, key=lambda t: t.cost)
    if instances in table:
        found = table[instances]
        return found[0], found[1:4]
    return _components(est, table, instances), []


def _components(est: Estimates, table: dict[frozenset[int], list[Tree]],
                instances: frozenset[int]) -> Tree:
    """A block whose instances are not all linked: its largest linked parts, cheapest
    tree each, crossed from the fewest rows up."""
    parts: list[Tree] = []
    left = set(instances)
    for subset in sorted(table, key=lambda s: (-len(s), sorted(s))):
        if subset <= left:
            parts.append(table[subset][0])
            left -= subset
    parts.sort(key=lambda t: (t.rows, sorted(t.subset)))
    tree = parts[0]
    for k, part in enumerate(parts[1:], 2):
        tree = join(est, tree, part, top=k == len(parts))
    return tree


def _greedy(est: Estimates, connected: Callable[[frozenset[int]], bool],
            covers: Mapping[frozenset[int], list[tuple[object, float]]]) -> Tree:
    """Beyond EXHAUSTIVE instances: start from the largest shared node, then join the
    two trees whose join has the fewest new rows per cycle (Fegaras's greedy operator
    ordering), linked ones before any cross product."""
    instances = frozenset(est.rows)
    trees: list[Tree] = []
    for subset in sorted(covers, key=lambda s: (-len(s), sorted(s))):
        if subset != instances and all(not (subset & t.subset) for t in trees):
            cover, rows = min(covers[subset], key=lambda c: c[1])
            trees.append(covered(est, subset, cover, rows))
            break
    done = frozenset().union(*(t.subset for t in trees))
    trees += [leaf(est, i) for i in sorted(instances - done)]
    while len(trees) > 1:
        pairs = [(a, b) for a, b in itertools.combinations(trees, 2)]
        linked = [p for p in pairs if connected(p[0].subset | p[1].subset)]
        a, b = min(linked or pairs, key=lambda p: (est.rate_of(p[0].subset | p[1].subset),
                                                   est.rows_of(p[0].subset | p[1].subset),
                                                   sorted(p[0].subset | p[1].subset)))
        trees = [t for t in trees if t is not a and t is not b]
        trees.append(join(est, a, b, top=not trees))
    return trees[0]


def recost(est: Estimates, tree: Tree, top: bool = True) -> Tree:
    """The same tree (a block's, `top` its answer), its views the same, costed on
    other estimates (a shared node keeps its rows)."""
    if tree.cover is not None:
        return covered(est, tree.subset, tree.cover, tree.rows)
    if tree.left is None:
        return leaf(est, min(tree.subset))
    return join(est, recost(est, tree.left, False), recost(est, tree.right, False), top,
                view=tree.view)


def shape(tree: Tree) -> frozenset[tuple[frozenset[int], bool]]:
    """What a tree computes above its leaves, each subset with whether a shared node
    does: two trees of one shape are one layout."""
    if tree.left is None:
        return frozenset({(tree.subset, True)}) if tree.cover is not None else frozenset()
    return shape(tree.left) | shape(tree.right) | {(tree.subset, False)}


def of_shape(est: Estimates, subsets: frozenset[frozenset[int]],
             covers: Mapping[frozenset[int], list[tuple[object, float]]] | None = None,
             ) -> Tree | None:
    """The tree of a layout that exists, costed on today's estimates: its joins
    compute `subsets`, its shared nodes (`covers`) the rest. None if they make no
    binary tree over all the instances."""
    instances = frozenset(est.rows)
    if len(instances) > EXHAUSTIVE:
        return None
    covers = covers or {}
    allowed = {*subsets, *covers, instances}
    tree, _ = best(est, lambda s: s in allowed, covers)
    return tree if all(s in allowed for s, _ in shape(tree)) else None


def block_estimates(block, rows_of: Callable[[int, int, list], float],
                    inflow_of: Callable[[int, float], float],
                    joined: Callable[[frozenset[int], list], float]) -> Estimates:
    """What ordering a block's joins by cost needs: each instance's rows after its local
    conditions (`rows_of(source, instance, conds)`) and their share of its source's new
    rows per cycle (`inflow_of(source, its rows)`); each linking condition's
    selectivity, those over the same instances estimated together (`joined(instances,
    conds)`: their rows joined, each under its local conditions)."""
    rows, rates, inflow, totals = {}, {}, {}, {}
    for i in sorted(block.instances):
        source = block.sources[i - 1]
        if source not in totals:  # (a self-join's instances share their source's)
            totals[source] = max(rows_of(source, i, []), 1.0)
            inflow[source] = inflow_of(source, totals[source])
        rows[i] = max(rows_of(source, i, block.within(frozenset({i}))), 1.0)
        rates[i] = inflow[source] * rows[i] / totals[source]
    groups: dict[frozenset[int], list] = {}
    for cond in block.conds:
        if len(cond.instances) > 1:
            groups.setdefault(cond.instances, []).append(cond)
    links = {linked: min(_linked(linked, conds, joined) / math.prod(rows[i] for i in linked),
                         1.0)
             for linked, conds in groups.items()}
    keyed = frozenset(c.instances for c in block.conds if equality(c.sql))
    return Estimates(rows, rates, links, keyed, inflow)


def _linked(linked: frozenset[int], conds: list, joined) -> float:
    """Rows of the linked instances joined; where several equalities link them, those
    of the most selective one with the other conditions: join keys go together
    (lineitem's part and supplier are partsupp's key), which PostgreSQL's product of
    selectivities does not know. It estimated 2,375 rows for TPC-H's 6M of lineitem ⋈
    partsupp; the most selective key alone, 24M."""
    keys = [c for c in conds if equality(c.sql)]
    if len(keys) < 2:
        return joined(linked, conds)
    others = [c for c in conds if c not in keys]
    return min(joined(linked, [key, *others]) for key in keys)

