"""Temporal filters: predicates against the stream clock, argus_now().

A query writes `argus_now()`; node code calls argus.clock_now() (the clock after this
cycle's claim) and argus.clock_previous() (before it), which do not depend on the
search_path. A selection whose predicate reads the clock is *temporal*: as the clock
advances, rows leave it (and, for predicates that are not lower bounds, enter it).

A lower bound — `col > E` or `col >= E` with E rising with the clock (argus_now() plus or
minus constants, date_trunc of it) — is monotone: a row that fails it once fails it
forever. Such nodes need not look for entering rows, find expiring rows through an
index, and let their parents purge the rows that fail every consumer's bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from .. import abi
from ..trees import DIALECT, conjuncts, unparen, tree_of

USER_FUNCTION = "argus_now"
NOW = "argus.clock_now()"
PREVIOUS = "argus.clock_previous()"

_FLIP = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}
_NEGATED = {">": "<=", ">=": "<"}


def is_clock(node: exp.Expr, name: str = "clock_now") -> bool:
    return (isinstance(node, exp.Dot) and isinstance(node.expression, exp.Anonymous)
            and node.expression.name.lower() == name and node.this.name.lower() == "argus")


def clock_call(name: str = "clock_now") -> exp.Expr:
    return tree_of(f"argus.{name}()")


def rewrite_user_calls(tree: exp.Expr) -> exp.Expr:
    """argus_now() as a user writes it -> argus.clock_now() as node code calls it."""
    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous) and node.name.lower() == USER_FUNCTION:
            return clock_call()
        return node
    return tree.transform(visit)


def reads_clock(sql_text: str | None) -> bool:
    return bool(sql_text) and NOW in sql_text


def calls_user_clock(tree: exp.Expr) -> bool:
    return any(node.name.lower() == USER_FUNCTION for node in tree.find_all(exp.Anonymous))


def at_previous_clock(sql_text: str) -> str:
    """The same predicate evaluated at the clock before this cycle."""
    tree = tree_of(sql_text)
    return tree.transform(
        lambda n: clock_call("clock_previous") if is_clock(n) else n).sql(DIALECT)


def clock_once(sql_text: str) -> str:
    """The same SQL reading the clock once per statement: `(SELECT argus.clock_now())`
    is computed once (an InitPlan), where a bare call of the catalog-reading function
    runs for every row (about a microsecond each)."""
    if not reads_clock(sql_text) and PREVIOUS not in sql_text:
        return sql_text
    tree = tree_of(sql_text)

    def once(node: exp.Expr) -> exp.Expr:
        if is_clock(node) or is_clock(node, "clock_previous"):
            if not isinstance(node.parent, exp.Select):  # already once
                return exp.Subquery(this=exp.select(node.copy()))
        return node

    return tree.transform(once).sql(DIALECT)


def clock_variables(sql_text: str) -> str:
    """The same SQL reading the clock from the cycle program's variables (abi.CLOCK_NEW
    and abi.CLOCK_OLD, which its claim set to argus.clock_now() and clock_previous()):
    parameters of a static statement, whose values Citus sends the workers, where a
    DELETE of a distributed history may call no function of a row ("STABLE functions
    used in UPDATE queries cannot be called with column references")."""
    names = {"clock_now": abi.CLOCK_NEW, "clock_previous": abi.CLOCK_OLD}

    def variable(node: exp.Expr) -> exp.Expr:
        for name, replaced in names.items():
            if is_clock(node, name):
                return exp.column(replaced)
        return node

    return tree_of(sql_text).transform(variable).sql(DIALECT)


@dataclass(frozen=True)
class Bound:
    column: str  # a column of the node's input (t1), by name
    op: str  # '>' or '>='
    expr: str  # rises with the clock

    def failed(self, alias: str = "t1") -> str:
        """SQL true for rows of `alias` that fail the bound now, and so forever."""
        column = exp.column(self.column, table=alias, quoted=True).sql(DIALECT)
        return f"{column} {_NEGATED[self.op]} ({self.expr})"


def _rising(expr: exp.Expr) -> bool:
    """True if expr never falls as the clock rises, in any time zone: the clock, plus or
    minus an interval of fixed length (hours and smaller units: a day or a month added
    to a timestamptz is a calendar day, 23 or 25 hours across a daylight saving change),
    truncated to an hour or less (or to any unit in UTC). A cast to another type may
    wrap (::time) or go back an hour at a daylight saving change (::timestamp)."""
    expr = unparen(expr)
    if is_clock(expr):
        return True
    if isinstance(expr, (exp.Add, exp.Sub)):
        return _fixed_interval(expr.right) and _rising(expr.left)
    if isinstance(expr, exp.Cast):
        return expr.to.this == exp.DataType.Type.TIMESTAMPTZ and _rising(expr.this)
    if isinstance(expr, (exp.DateTrunc, exp.TimestampTrunc)):
        unit = expr.args.get("unit")
        zone = expr.args.get("zone")
        unit_name = unit.name.lower() if isinstance(unit, (exp.Literal, exp.Var)) else None
        if isinstance(zone, exp.Literal) and zone.name.upper() in ("UTC", "ETC/UTC", "GMT"):
            return unit_name is not None and _rising(expr.this)
        return zone is None and unit_name in _SHORT_UNITS and _rising(expr.this)
    return False


_SHORT_UNITS = {"microseconds", "milliseconds", "second", "minute", "hour"}


def _fixed_interval(expr: exp.Expr) -> bool:
    """An interval constant of fixed length: no days, months or years."""
    expr = unparen(expr)
    if isinstance(expr, exp.Interval):
        text = f"{expr.this.name} {expr.args['unit'].name if expr.args.get('unit') else ''}"
    elif isinstance(expr, exp.Cast) and expr.to.this == exp.DataType.Type.INTERVAL \
            and isinstance(expr.this, exp.Literal):
        text = expr.this.name
    else:
        return False
    units = re.findall(r"[a-z]+", text.lower())
    return bool(units) and all(u.rstrip("s") in _FIXED for u in units)


_FIXED = {"microsecond", "millisecond", "second", "sec", "minute", "min", "m", "hour", "hr",
          "h", "us", "ms"}


def classify(predicate: str | None) -> tuple[bool, list[Bound], bool]:
    """(temporal, lower bounds found, every temporal conjunct is a lower bound)."""
    if not reads_clock(predicate):
        return False, [], True
    tree = tree_of(predicate)
    bounds, monotone = [], True
    for conjunct in conjuncts(tree):
        if not any(is_clock(n) for n in conjunct.walk()):
            continue
        bound = _bound(conjunct)
        if bound is None:
            monotone = False
        else:
            bounds.append(bound)
    return True, bounds, monotone


def clock_conjuncts(predicate: str) -> list[str]:
    """The conjuncts of a predicate that read the clock."""
    tree = tree_of(predicate)
    return [c.sql(DIALECT) for c in conjuncts(tree) if any(is_clock(n) for n in c.walk())]


def _bound(conjunct: exp.Expr) -> Bound | None:
    if type(conjunct) not in _FLIP:
        return None
    left, right = conjunct.left, conjunct.right
    kind = type(conjunct)
    if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
        left, right, kind = right, left, _FLIP[kind]
    if kind not in (exp.GT, exp.GTE) or not isinstance(left, exp.Column):
        return None
    if not _rising(right):
        return None
    return Bound(left.name, ">" if kind is exp.GT else ">=", right.sql(DIALECT))
