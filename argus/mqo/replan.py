"""Re-planning a registered query's joins (issue 21): each of its blocks' tree on
today's estimates, next to the tree it has, and which of them to build.

The query's own nodes (`hidden`) are not offered as free shared nodes, as they
would be to a new query: their upkeep is the query's alone, so the tree they form is
costed like any other. Nodes other queries use stay free to reuse, and are kept.
Pure: argus.adapt runs the builder with it and decides.
"""

from __future__ import annotations

from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass, field

from . import order
from .order import Estimates, Tree

@dataclass(frozen=True)
class Choice:
    """One block: the tree it has (None: its nodes form no tree the order can cost),
    the one to move to (the cheapest, or for `other` the forced one), and the one
    built (a prediction builds the tree it has)."""

    current: Tree | None
    target: Tree
    chosen: Tree
    answer: float | None = None  # the rows the block's answer holds (None: unknown)
    names: tuple[str, ...] = ()  # instance i's source is names[i - 1]
    # the current and target trees costed with the windows as they are now, where some
    # is turning over (the trees above cost them as they will be: Estimates.held)
    held: tuple[Tree | None, Tree] | None = None

    @property
    def build(self) -> float:
        answer = self.answer
        if self.held is not None and answer is not None:  # (once the windows turned over)
            answer *= self.target.rows / max(self.held[1].rows, 1.0)
        return _built(self.target, answer)

    def as_held(self) -> Choice:
        """The same choice with the windows as they are now."""
        current, target = self.held or (self.current, self.target)
        return dataclasses.replace(self, current=current, target=target, held=None)

    def text(self, tree: Tree | None) -> str:
        if tree is None:
            return "?"
        return tree.text(lambda i: self.names[i - 1] if self.names else f"i{i}")

    @property
    def changes(self) -> bool:
        return self.current is None or order.shape(self.target) != order.shape(self.current)


def _built(target: Tree, answer: float | None) -> float:
    """Rows the target's new nodes are built with: its joins' estimated rows, the
    answer's as it is (the same rows, whatever the tree)."""
    joins = target.joins()
    if not joins:
        return 0.0
    top = joins[-1].rows if answer is None else answer
    return sum(t.rows for t in joins[:-1] if not t.view) + top


@dataclass
class Replan:
    """`mode`: keep (build the tree it has: a prediction, rolled back), best, or other
    (the cheapest tree that differs from the one it has, whatever it costs: tests force
    migrations with it)."""

    hidden: frozenset[int]  # the nodes only this query uses
    uses: frozenset[int]  # every node it uses
    mode: str = "keep"
    growth: float | None = None  # settings.virtual_join_growth (joins as views)
    # nodes queries planned again with this one built just before it (argus.adapt's
    # group re-plan): free to reuse, even for what its own nodes compute
    fresh: frozenset[int] = frozenset()
    choices: list[Choice] = field(default_factory=list)

    def choose(self, est: Estimates, mine: frozenset[frozenset[int]],
               used: Mapping[frozenset[int], list[tuple[object, float]]],
               best: Tree, alternatives: list[Tree], answer: float | None = None) -> Tree:
        """`mine`: the subsets the hidden nodes compute; `used`: shared nodes the
        query uses, by the subset they compute; `answer`: the rows of the block's
        answer."""
        current = order.of_shape(est, mine, used)
        target = best
        if self.mode == "other" and current is not None:
            target = next((t for t in [best, *alternatives]
                           if order.shape(t) != order.shape(current)), current)
        chosen = current if self.mode == "keep" and current is not None else target
        now = est.as_held()
        held = None if now is None else (
            None if current is None else order.recost(now, current), order.recost(now, target))
        self.choices.append(Choice(current, target, chosen, answer, held=held))
        return chosen

    def alone(self, instances: frozenset[int]) -> Tree:
        """A block of one source, which has no joins to order: the choice of its one
        tree, which costs nothing (as `choose` would cost it)."""
        tree = Tree(instances, 0.0, 0.0)
        self.choices.append(Choice(tree, tree, tree))
        return tree

    def name_last(self, names: tuple[str, ...]) -> None:
        """Name the instances of the block last chosen (for logs and explain)."""
        if self.choices:
            self.choices[-1] = dataclasses.replace(self.choices[-1], names=names)


@dataclass(frozen=True)
class Prediction:
    """A query's layout and the best one, in the order's row operations per cycle.
    `build`: rows the new layout's nodes are built with (its joins' rows, top
    included). `held`: the same three with the windows as they are now, where some is
    turning over (None: none is)."""

    current: float | None  # None: some block's layout cannot be costed
    best: float
    build: float
    trees: list[tuple[str, str]]  # per changing block: (current, best)
    held: Prediction | None = None

    @property
    def saving(self) -> float:
        return 0.0 if self.current is None else self.current - self.best


def predict(choices: list[Choice]) -> Prediction:
    changing = [c for c in choices if c.changes]
    held = None
    if any(c.held is not None for c in choices):
        held = predict([c.as_held() for c in choices])
    return Prediction(
        sum(c.current.cpu for c in choices) if all(c.current is not None for c in choices)
        else None,
        sum(c.target.cpu for c in choices),
        sum(c.build for c in changing),
        [(c.text(c.current), c.text(c.target)) for c in changing], held)


def changes(kept: Prediction, best: Prediction) -> bool:
    """Whether one query planned with others would change its trees or what it costs."""
    return bool(best.trees or best.build) or kept.current is None or kept.current != best.best


def total(kept: list[Prediction], best: list[Prediction]) -> Prediction:
    """Queries planned together: the layout they have (`kept`, each node paid by its
    first user) against the best (each node paid by the first whose tree has it),
    `kept[i]` and `best[i]` one query's. A query whose trees and cost stay is left out of both:
    migration_min_gain weighs the saving against what is paid, and the upkeep of a
    node the others leave to it would only dilute their gain (docs/adapt.md)."""
    changing = [(k, b) for k, b in zip(kept, best, strict=True) if changes(k, b)]
    if changing:
        kept, best = [k for k, _ in changing], [b for _, b in changing]
    held = None
    if any(p.held is not None for p in kept + best):
        held = total([p.held or p for p in kept], [p.held or p for p in best])
    known = all(p.current is not None for p in kept)
    return Prediction(
        sum(p.current for p in kept) if known else None, sum(p.best for p in best),
        sum(p.build for p in best), [t for p in best for t in p.trees], held)


# a query the windows' turnover held back is planned again after this many cycles
HELD_RECHECK = 3


def decide(p: Prediction, min_gain: float, horizon: int) -> tuple[bool, str, bool]:
    """Migrate when the layout it has costs `min_gain` more than the best (hysteresis:
    no pair of layouts is each that much cheaper than the other, so none flaps) and
    the saving over `horizon` cycles pays for building the new nodes, priced with the
    windows as they will be (the cycles to come). While a window still holds rows from
    before a drift, the new nodes would be built with them and the cycles until they
    leave would pay for them: then it migrates only if, with the windows as they are,
    it saves rows at once, and over the HELD_RECHECK cycles it could wait more than the
    rows it would build now and the windows will drop; else it waits (the third value:
    argus.adapt plans it again HELD_RECHECK cycles later)."""
    go, why = _gains(p, min_gain, horizon)
    held = p.held
    if not go or held is None or held.current is None:
        return go, why, False
    surplus = held.build - p.build  # (rows built now that the windows will drop)
    if held.saving > 0 and held.saving * HELD_RECHECK >= surplus:
        return True, (f"{why} (with its windows as they are now, {held.saving:,.0f} of "
                      f"{held.current:,.0f}, built with {held.build:,.0f} rows)"), False
    now = (f"would cost {-held.saving:,.0f} more than its {held.current:,.0f} row operations "
           "per cycle" if held.saving <= 0 else
           f"saves {held.saving:,.0f} row operations per cycle, over {HELD_RECHECK} cycles "
           f"less than the {surplus:,.0f} more rows its new nodes would be built with")
    return False, (f"not yet: once its windows have turned over it {why}; with them as they "
                   f"are now it {now}"), True


def _gains(p: Prediction, min_gain: float, horizon: int) -> tuple[bool, str]:
    if not p.trees:
        return False, "the layout it has is the cheapest"
    if p.current is None:
        return False, "its layout cannot be costed (shared or more than " \
                      f"{order.EXHAUSTIVE} instances in a block)"
    if p.saving <= 0:  # (the order's estimates can put the best a little above it)
        return False, (f"the best other layout would cost {-p.saving:,.0f} more than its "
                       f"{p.current:,.0f} row operations per cycle")
    if p.saving <= min_gain * p.current:
        return False, (f"saves {p.saving:,.0f} of {p.current:,.0f} row operations per cycle, "
                       f"not more than migration_min_gain ({min_gain:g})")
    if p.saving * horizon <= p.build:
        return False, (f"saves {p.saving:,.0f} row operations per cycle: over "
                       f"migration_horizon ({horizon} cycles) less than the "
                       f"{p.build:,.0f} rows of its new nodes")
    return True, (f"saves {p.saving:,.0f} of {p.current:,.0f} row operations per cycle "
                  f"({p.saving / p.current:.0%}); its new nodes hold {p.build:,.0f} rows")


def evaluation(current: str, own_ms: float, rerun_ms: float | None, before_ms: float | None,
               min_gain: float) -> tuple[str, str] | None:
    """Issue 25's fallback: the evaluation a query should move to, and why, or None. An
    incremental query moves to re-running when that (`rerun_ms`, predicted per cycle)
    costs less than its own nodes took per cycle (`own_ms`) by more than `min_gain`; a
    query the fallback made re-run moves back when its node takes more than its nodes
    took before the switch (`before_ms`) by as much. (None for either: not known.)"""
    if current == "incremental":
        if rerun_ms is not None and rerun_ms < own_ms * (1 - min_gain):
            return "rerun", (f"re-running it (about {rerun_ms:,.1f} ms per cycle) costs less "
                             f"than its nodes ({own_ms:,.1f} ms per cycle)")
    elif before_ms is not None and before_ms < own_ms * (1 - min_gain):
        return "incremental", (f"re-running it ({own_ms:,.1f} ms per cycle) costs more than "
                               f"its nodes did ({before_ms:,.1f} ms per cycle)")
    return None


def observed(builder, block, estimates: Estimates, matches_of) -> Estimates:
    """A re-plan's estimates with what the last cycles saw, for the data drifts
    away from the history's statistics: each source's new rows per cycle over the
    last few cycles, the share of the last cycle's rows passing each instance's
    local conditions, and the rows of the node computing them where one exists —
    of a sliding window, the rows it will hold once it has turned over: a layout is
    chosen for the cycles to come (migration_horizon), which a window's old rows
    leave within its span (and the rows it holds now, `held`: decide waits for them
    to leave when only the turned-over window gains). `builder`: the network
    (mqo.protocol.Network); `matches_of`: the nodes computing instance i alone."""
    rows, rates, held = dict(estimates.rows), dict(estimates.rates), {}
    inflow = {s: builder.observed(s) for s in estimates.inflow}
    inflow = {s: estimates.inflow[s] if r is None else r for s, r in inflow.items()}
    for i in block.instances:
        source = block.sources[i - 1]
        local = block.within(frozenset({i}))
        share = builder.recent_share(source, i, local) if local else 1.0
        if share is None:  # (no rows last cycle: the history's share)
            share = estimates.rates[i] / max(estimates.inflow[source], 1e-9)
        rates[i] = inflow[source] * share
        exact = [m for m in matches_of(i) if not m.residual] if local else []
        if exact:  # (the node computing it: the one with the fewest rows)
            rows[i] = max(float(min(m.node.rows for m in exact)), 1.0)
        turned = builder.turned_over(source)
        if turned is not None:  # (a window the drift has not yet filled: as it will be)
            held[i] = rows[i]
            rows[i], inflow[source] = max(turned[0] * share, 1.0), turned[1]
            rates[i] = turned[1] * share
    recent = {}
    for linked in estimates.links:
        if len(linked) == 2:
            conds = [c for c in block.conds if c.instances == linked]
            measured = builder.recent_link(block, linked, conds, rows)
            if measured is not None:
                recent[linked] = measured
    return dataclasses.replace(estimates, rows=rows, rates=rates, inflow=inflow,
                               recent=recent, held=held)
