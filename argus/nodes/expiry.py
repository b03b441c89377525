"""Direct expiration (Golab and Özsu 2003): an inner join over sliding windows whose rows
leave by themselves.

A window over an insert-only input (a monotone temporal selection) retracts a row only
when the clock passes its bound. A join of two such inputs (or of joins of them) under
one bound then holds exactly the pairs whose components are all still inside it: a pair
expires when its oldest component does. Such a join keeps that component's bound column
as `argus_expiry` (indexed); over timestamptz windows of different lengths, the time a
pair expires at (each row's time plus its window's length, the least of them), against
the clock. It takes only its inputs' new rows (their retractions are rows
leaving their windows, each pair of which expires here too), and finds its own expired
rows by the index — where a join of retractions paid a probe per retracted row and its
flush a hash lookup per expired pair (issue 52's windowed three-way join: 49,000 expired
pairs a cycle, 188 ms deleted by hash against 18 ms by range). Recorded in the join's
layout when it is made ("expiry": [op, bound, type]); a join made before keeps the
Rete rule on retractions.
"""

from __future__ import annotations

from collections.abc import Callable

from psycopg import sql
from sqlglot import exp

from .. import abi
from ..frontend.temporal import Bound, clock_once, is_clock
from ..templates import render
from ..trees import DIALECT, unparen, tree_of
from .base import SIGN_ID, T1, Node, Step, cols, var, virtual

COLUMN = "argus_expiry"


def expiring(node: Node) -> bool:
    return bool(node.layout.get("expiry"))


def of_inputs(parents: list[Node], parent_of: Callable[[int], Node]
              ) -> tuple[str, str, str] | None:
    """(op, bound, type) a new inner join of `parents` expires by: their bound if they
    have one; for timestamptz windows of other lengths (`argus.clock_now() - INTERVAL
    …`, of fixed length), the clock itself, each side's rows expiring at their time plus
    their window's length (`shifted`)."""
    found = {_source(p, parent_of) for p in parents}
    if None in found:
        return None
    if len(found) == 1:
        return found.pop()
    if (len({op for op, _, _ in found}) == 1 and {t for _, _, t in found} == {TIMESTAMPTZ}
            and all(_length(expr) is not None for _, expr, _ in found)):
        return next(iter(found))[0], CLOCK, TIMESTAMPTZ
    return None


TIMESTAMPTZ = "timestamp with time zone"
CLOCK = "argus.clock_now()"


def _length(expr: str) -> str | None:
    """The window's length of a bound `argus.clock_now() - INTERVAL '…'`, as SQL ("" for
    the clock itself), or None if the bound is not of that form."""
    tree = unparen(tree_of(expr))
    if is_clock(tree):
        return ""
    if (isinstance(tree, exp.Sub) and is_clock(unparen(tree.this))
            and isinstance(tree.expression, exp.Interval)):
        return tree.expression.sql(DIALECT)
    return None


# the last instant a timestamptz holds: a time within a window's length of it expires
# never (its sum would overflow; found by a helper)
LAST = "'294276-12-31 23:59:59.999999+00'::timestamp with time zone"


def shifted(value: str, parent_bound: str, bound: str) -> str:
    """A row's time (or expiry) under `parent_bound`, moved to expire under `bound`
    (of_inputs): as it is if they are one bound, else plus its window's length."""
    length = "" if parent_bound == bound else _length(parent_bound)
    if not length:
        return value
    return (f"CASE WHEN {value} > {LAST} - {length} THEN 'infinity'::timestamp with time "
            f"zone ELSE {value} + {length} END")


def _source(node: Node, parent_of: Callable[[int], Node]) -> tuple[str, str, str] | None:
    """What the node's rows expire by, if expiring is the only way they leave: an
    expiring join; a window over an insert-only input whose lower bounds (on columns of
    one type) are one bound."""
    if node.kind == "join":
        return tuple(node.layout["expiry"]) if expiring(node) else None
    if node.kind != "select" or not window(node, parent_of(node.parents[0])):
        return None
    bounds = {(b.op, b.expr) for b in node.spec.bounds}
    types = {dict(zip(node.columns, node.types)).get(c) for c in bound_columns(node)}
    if len(bounds) != 1 or len(types) != 1 or None in types:
        return None
    ((op, expr),), (pg_type,) = bounds, types
    return op, expr, pg_type


def window(node: Node, parent: Node) -> bool:
    """A selection whose only retractions are its rows leaving its window: lower time
    bounds over an insert-only input (a table's deletes retract too). Its flush deletes
    them by its bounds' indexes, not by their hashes."""
    return (node.kind == "select" and not virtual(node) and node.spec.monotone
            and bool(node.spec.bounds) and parent.insert_only)


def bound_columns(node: Node) -> list[str]:
    """A temporal selection's own columns that hold its lower bounds' columns (it keeps
    them: SelectCompiler.own), one per bound."""
    own = {e: n for n, e in zip(node.columns, node.exprs)}
    return [own[exp.column(b.column, "t1", quoted=True).sql(DIALECT)] for b in node.spec.bounds]


def expires_by(node: Node, parents: list[Node]) -> list[str] | None:
    """The history's columns the node's rows expire by, each indexed when it is made
    (None: its rows leave otherwise). argus.expiry_upkeep (catalog/functions.sql) drops
    those indexes while a large share of the history leaves at every cycle, which a
    scan then finds for less than the index costs the rows coming in, and makes them
    again when it does not."""
    if expiring(node):
        return [COLUMN]
    if parents and window(node, parents[0]):
        return bound_columns(node)
    return None


def values(parent: Node, alias: str) -> list[str]:
    """SQL of the columns (of `alias`, a row of `parent`) a row's expiry is the least of."""
    names = [COLUMN] if parent.kind == "join" else bound_columns(parent)
    return [sql.Identifier(alias, n).as_string(None) for n in names]


def _own_bound(parent: Node) -> tuple[str, str]:
    """(op, bound) a join's input expires by (a window's bounds are one: _source)."""
    if parent.kind == "join":
        op, expr, _ = parent.layout["expiry"]
        return op, expr
    first = parent.spec.bounds[0]
    return first.op, first.expr


def bound(node: Node) -> Bound:
    op, expr, _ = node.layout["expiry"]
    return Bound(COLUMN, op, expr)


def pair(node: Node, parents: list[Node]) -> tuple[str, str]:
    """A pair's expiry (the least of its components'), and SQL true for pairs still
    inside the bound at the cycle's clock (each component's own test, which an index
    of either side can serve)."""
    _, expr, _ = node.layout["expiry"]
    moved, live = [], []
    for parent, alias in zip(parents, ("t1", "t2")):
        op, own = _own_bound(parent)
        for v in values(parent, alias):
            moved.append(shifted(v, own, expr))
            live.append(f"{v} {op} ({own})")
    return (moved[0] if len(moved) == 1 else f"least({', '.join(moved)})"), \
        clock_once(" AND ".join(live))


def expired(node: Node, alias: str = "t1") -> str:
    return clock_once(bound(node).failed(alias))


def flush(node: Node, expired_rows: str, hidden: list[str]) -> list[Step]:
    """The flush of a node whose only retractions are its rows that left (SQL true of
    them: `expired_rows`, over t1): they leave by an index of their bound, the delta's
    new rows are appended with the `hidden` columns of its history."""
    return [Step(render("node/flush_expired", hist=node.hist, t1=T1,
                        expired=sql.SQL(expired_rows)), abi.v(abi.CLOCK_MOVED)),
            Step(render("node/flush_new", hist=node.hist, delta=node.delta,
                        columns=cols([*node.columns, *hidden]), sign=SIGN_ID),
                 sql.SQL("{} > 0").format(var(node.id)), dynamic=False)]
