"""Aggregate sharing (ARGUS §5.3): an aggregate the network already computes, or can
compute from a finer one, is not built again.

For a new `GROUP BY D` over an input node X, the index (group_topology, group_exprs)
gives the aggregate nodes over X whose groups contain D. Then, in order:

- an aggregate with exactly the groups D is shared, after *horizontal expansion* (its
  missing aggregates and their bookkeeping added, and the node refilled) if needed;
- else the smallest finer aggregate `GROUP BY D ∪ E` that holds the books the query's
  aggregates need (counts, sums, sums of squares, extremes — algebraic ones only) is
  regrouped: *vertical expansion*, a new aggregate node over it whose books add up
  its books (`argus.aggregates`);
- else a new aggregate over X is built, and every existing coarser aggregate over X
  that it can serve, and that would read fewer rows from it than from X, is
  *rerouted* to be computed from it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from psycopg import sql
from sqlglot import exp

from ..aggregates import books_needed, entries
from ..failures import never_fails
from ..trees import tree_of
from ..plan import Agg, Col

if TYPE_CHECKING:  # the optimizer reads nodes; it does not depend on how they compile
    from ..nodes import Node


class Groups(Protocol):
    """What the optimizer reads, and records, of the aggregates over each input: which
    aggregate nodes group an input by which canonical expressions, whether a node is
    regrouped from a finer one, and how many rows a node holds. argus.network reads the
    catalog (group_topology, group_exprs, node_stats); tests use a dict."""

    def exprs(self, node_id: int) -> list[str]:
        """The node's canonical group expressions, in order."""

    def rerolled(self, node_id: int) -> bool:
        """Is the node regrouped from a finer aggregate's books?"""

    def rows(self, node_id: int) -> int:
        """Rows in the node's history."""

    def covering(self, input_id: int, exprs: list[str]) -> list[int]:
        """Working aggregate nodes over `input_id` grouping by at least `exprs`,
        smallest first."""

    def coarser(self, input_id: int, than: int, width: int) -> list[int]:
        """Working aggregate nodes over `input_id`, computed from it directly, other
        than `than`, grouping by fewer than `width` expressions."""

    def record(self, node_id: int, input_id: int, exprs: list[str], rerolled: bool) -> None:
        """A new aggregate node (once; a shared one is recorded already)."""

    def reroll(self, node_id: int) -> None:
        """The node is now computed from a finer aggregate's books."""


@dataclass(frozen=True)
class Want:
    """A new aggregate: groups and aggregates over the input X's columns."""

    groups: tuple[Col, ...]
    aggs: tuple[Agg, ...]
    categories: dict  # argument SQL -> its category (argus.aggregates: int, numeric, …)


@dataclass
class Offer:
    """An aggregate node over X and what it holds."""

    node: Node
    rows: int
    groups: dict[str, str]  # canonical group expression over X -> column
    rerolled: bool
    specs: dict[tuple, str]  # (func, arg over X, distinct) -> aggregate column
    books: dict[tuple, tuple[str, str]]  # (arg over X, suffix or min/max) -> (column, change)


def _key(arg: str | None, suffix: str, combine: str) -> tuple:
    """A book's identity over X: the extreme of the argument (a min or a max book, "m",
    whichever aggregate keeps it), else its kind (a numeric's scale, "d", is a max of
    another value)."""
    return (arg, combine if suffix == "m" else suffix)


def offer(builder, node_id: int) -> Offer:
    node = builder.load(node_id)
    d = node.definition
    canon = builder.groups.exprs(node_id)
    rows, rerolled = builder.groups.rows(node_id), builder.groups.rerolled(node_id)
    specs, books = {}, {}
    for e in entries(d):
        arg_x = e.merge["arg"] if e.regrouped else e.arg  # its argument over X
        specs[(e.func, arg_x, e.distinct)] = e.name
        if e.func == "count" and e.arg is None and not e.regrouped and not e.distinct:
            # a direct count(*): its column counts X's rows, and still does once the node
            # is regrouped from a finer one (reroute), where its argus_n then counts the
            # finer groups (read as the rows' count, a coarser count(*) went wrong: a helper)
            books[(None, "c")] = (e.name, "")
        if e.distinct or (e.arg is None and not e.regrouped):
            continue
        for suffix, change, combine in books_needed(e.func, e.category):
            books[_key(arg_x, suffix, combine)] = (f"argus_{e.name}_{suffix}", change)
    return Offer(node, rows, dict(zip(canon, [g for g, _ in d["groups"]])), rerolled,
                 specs, books)


def serve(off: Offer, want: Want, types: dict) -> list[dict] | None:
    """For each wanted aggregate, the books of `off` it is computed from (suffix ->
    [column, type]); None when some aggregate cannot be computed from them."""
    out = []
    for a in want.aggs:
        if a.distinct:
            return None
        category = want.categories.get(a.arg)
        sources = {}
        for suffix, change, combine in books_needed(a.func, category):
            got = off.books.get(_key(a.arg, suffix, combine))
            if got is None:
                return None
            column, offered = got
            if offered and offered != change:
                return None  # e.g. a real sum where a float8 one is needed
            sources[suffix] = [column, types[(a.func, a.arg, suffix)]]
        out.append(sources)
    return out


def book_types(builder, parent: Node, want: Want) -> dict:
    """PostgreSQL's type of each book a direct computation over X would keep."""
    keys, exprs = [], []
    for a in want.aggs:
        for suffix, change, _ in books_needed(a.func, want.categories.get(a.arg)):
            keys.append((a.func, a.arg, suffix))
            exprs.append(change.format(x=a.arg, s="1::smallint") if a.arg is not None
                         else "count(*)")
    return dict(zip(keys, builder.probe_types(parent, exprs)))


def aggregate(builder, parent: Node, want: Want) -> tuple[Node, dict[str, str]]:
    """The node computing `want` over `parent`, and where each plan column is in it."""
    groups = [g.expr for g in want.groups]
    if builder.sharing.strategy != "none" and len(set(groups)) == len(groups):
        offers = [offer(builder, n) for n in builder.groups.covering(parent.id, groups)]
        types = book_types(builder, parent, want)
        for off in offers:
            if set(off.groups) == set(groups):
                wanted = {(a.func, a.arg, a.distinct) for a in want.aggs}
                if _failing(parent, set(off.specs) ^ wanted):
                    continue
                missing = Want(want.groups, tuple(a for a in want.aggs if (a.func, a.arg,
                               a.distinct) not in off.specs), want.categories)
                if not missing.aggs:
                    return off.node, _names(off, want)
                sources = None
                if off.rerolled:  # its new aggregates come from the same finer node
                    sources = serve(offer(builder, off.node.parents[0]), missing, types)
                    if sources is None:
                        continue
                elif any(a.distinct for a in missing.aggs):
                    continue
                off = expand(builder, off, missing, sources)
                return off.node, _names(off, want)
        finer = [(off, sources) for off in offers if off.rows < builder.groups.rows(parent.id)
                 and not _failing(parent, off.specs)
                 for sources in [serve(off, want, types)] if sources is not None]
        if finer:
            off, sources = min(finer, key=lambda f: (f[0].rows, f[0].node.id))
            return _regroup(builder, parent, off, want, sources)
    node = _direct(builder, parent, want)
    if builder.sharing.strategy != "none":
        reroute(builder, parent, node)
    return node, {n: n for n in [g.name for g in want.groups] + [a.name for a in want.aggs]}


def _failing(parent: Node, specs) -> set[tuple]:
    """Those aggregates, (func, argument over X, distinct), that may fail on rows of X:
    an argument that may fail on a row, by an overflow too, or a total that may
    overflow (a sum or an average of floats, numerics or intervals: 1e308 + 1e308).
    A node holding one is shared only by queries that all want it: else a registrar's
    `sum(10 / (id - 5))` or `sum(d)`, added to the node of another role's `count(*)`
    by the same groups, failed and isolated both (two helpers' attacks)."""
    types = parent.typed("t1")
    return {s for s in specs if s[1] is not None and not (
        never_fails(s[1], types=types) and _bounded(s[0], s[1], types))}


def _bounded(func: str, arg: str, types: dict) -> bool:
    """Can the aggregate's value not overflow? Counts and extremes; sums and averages
    of integers (of bigints a numeric, which their count cannot overflow) and of
    numerics of a precision (`numeric(14,2)`: a sum gains 19 digits at most)."""
    if func in ("count", "min", "max", "bool_and", "bool_or", "every"):
        return True
    column = tree_of(arg)
    kind = types.get((column.table, column.name), "") if isinstance(column, exp.Column) else ""
    return func in ("sum", "avg") and (kind in ("smallint", "integer", "bigint")
                                       or kind.startswith("numeric("))


def _names(off: Offer, want: Want) -> dict[str, str]:
    names = {g.name: off.groups[g.expr] for g in want.groups}
    return names | {a.name: off.specs[(a.func, a.arg, a.distinct)] for a in want.aggs}


def _entry(a: Agg, category) -> list:
    return [a.name, a.func, a.arg, a.distinct, category]


def _columns(groups, aggs) -> tuple[Col, ...]:
    return tuple(groups) + tuple(
        Col(a.name, a.call) for a in aggs)


def _direct(builder, parent: Node, want: Want) -> Node:
    definition = {"groups": [[g.name, g.expr] for g in want.groups],
                  "aggregates": [_entry(a, want.categories.get(a.arg)) for a in want.aggs]}
    node = builder.ensure("aggregate", [parent], _columns(want.groups, want.aggs), definition,
                          False)
    builder.groups.record(node.id, parent.id, [g.expr for g in want.groups], rerolled=False)
    return node


def _regroup(builder, parent: Node, off: Offer, want: Want, sources) -> tuple[Node, dict]:
    groups = tuple(Col(g.name, sql.Identifier("t1", off.groups[g.expr]).as_string(None))
                   for g in want.groups)
    aggregates = [_entry(a, want.categories.get(a.arg)) + [{"from": src, "arg": a.arg}]
                  for a, src in zip(want.aggs, sources)]
    node = builder.ensure("aggregate", [off.node], _columns(groups, want.aggs),
                          {"groups": [[g.name, g.expr] for g in groups],
                           "aggregates": aggregates}, False)
    builder.groups.record(node.id, parent.id, [g.expr for g in want.groups], rerolled=True)
    return node, {n: n for n in [g.name for g in want.groups] + [a.name for a in want.aggs]}


def expand(builder, off: Offer, extra: Want, sources: list | None = None) -> Offer:
    """Horizontal expansion: add aggregates (and their books) to an aggregate node —
    over its parent's rows, or, for a regrouped node, merged from its parent's books
    (`sources`) — then refill it from its parent."""
    node = off.node
    taken = set(node.columns) | {e[0] for e in node.definition["aggregates"]}
    added = []
    for a in extra.aggs:
        name, n = a.name, 1
        while name in taken:
            n += 1
            name = f"x{n}"
        taken.add(name)
        added.append(dataclasses.replace(a, name=name))
    definition = dict(node.definition)
    definition["aggregates"] = definition["aggregates"] + [
        _entry(a, extra.categories.get(a.arg))
        + ([{"from": sources[i], "arg": a.arg}] if sources else [])
        for i, a in enumerate(added)]
    columns = [Col(c, e) for c, e in zip(node.columns, node.exprs)] + list(_columns((), added))
    builder.restructure(node, definition, columns)
    return offer(builder, node.id)


def reroute(builder, parent: Node, new: Node) -> None:
    """Compute existing coarser aggregates over `parent` from the new, finer `new`
    when it can serve them and is smaller than `parent`."""
    coarser = builder.groups.coarser(parent.id, new.id, len(new.definition["groups"]))
    if not coarser:  # (first: no row is counted then, which in a prediction fills `new`)
        return
    new_off = offer(builder, new.id)
    if new_off.rows >= builder.groups.rows(parent.id) or _failing(parent, new_off.specs):
        return
    for node_id in coarser:
        off = offer(builder, node_id)
        if not set(off.groups) < set(new_off.groups):
            continue
        d = off.node.definition
        want = Want(tuple(Col(name, canon) for canon, name in off.groups.items()),
                    tuple(Agg(e[0], e[1], e[2], e[3]) for e in d["aggregates"]),
                    {e[2]: e[4] for e in d["aggregates"] if e[2] is not None})
        sources = serve(new_off, want, book_types(builder, parent, want))
        if sources is None:
            continue
        groups = [[name, sql.Identifier("t1", new_off.groups[canon]).as_string(None)]
                  for canon, name in off.groups.items()]
        order = {name: i for i, (name, _) in enumerate(d["groups"])}
        groups.sort(key=lambda g: order[g[0]])
        definition = {"groups": groups,
                      "aggregates": [e[:5] + [{"from": src, "arg": e[2]}]
                                     for e, src in zip(d["aggregates"], sources)]}
        columns = [Col(c, e) for c, e in zip(off.node.columns, off.node.exprs)]
        builder.restructure(off.node, definition, columns, new_parent=new)
        builder.groups.reroll(node_id)


