"""Whether an expression can fail on a row: where it cannot, argus evaluates it where
an error would reach a reader (a view of a stream, a query's output no cycle checks
again), not only in a cycle that isolates the queries it fails. By the expression's
form alone, or by its columns' types too; each rule tried on PostgreSQL over its types'
extremes (tests/test_never_fails.py)."""

from __future__ import annotations

import decimal
from collections.abc import Mapping

from sqlglot import exp

from .trees import unparen, tree_of


# What PostgreSQL evaluates on any row without an error: columns, constants, comparisons
# and logic. Arithmetic can overflow, a cast or a function can fail on a row's value.
_NEVER_FAILS = (exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren,
                exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
                exp.Is, exp.Between, exp.In, exp.Tuple, exp.DataType, exp.DataTypeParam,
                exp.Star, exp.Alias)


# Arithmetic that fails only by overflow, at the ends of its type's range.
_OVERFLOWS = (exp.Add, exp.Sub, exp.Mul, exp.Neg, exp.Interval, exp.Var)


def _plain_pattern(node: exp.Expr) -> bool:
    """[NOT] LIKE or ILIKE a constant pattern with no backslash (the default escape,
    which fails at the pattern's end) and no ESCAPE clause: it matches or not whatever
    the row. (Under a nondeterministic collation it fails on every row alike, in the
    first statement that reads one.)"""
    pattern = node.expression
    return (isinstance(node, exp.Like | exp.ILike) and isinstance(pattern, exp.Literal)
            and pattern.is_string and "\\" not in pattern.this)


Types = Mapping[tuple[str, str], str]  # (table alias, column) → its PostgreSQL type


def never_fails(text: str, overflow: bool = False, types: Types | None = None) -> bool:
    """Whether an expression cannot fail on any row (a constant's cast fails, if it
    does, when the statement is planned); with `overflow`, except by an overflow of
    +, - or * (a date 20 days after the last date PostgreSQL has). Knowing its columns'
    `types`, also functions that fail on no value of their types (_typed_safe)."""
    allowed = _NEVER_FAILS + (_OVERFLOWS if overflow else ())
    for node in tree_of(text).walk():
        constant = isinstance(node, exp.Cast) and isinstance(unparen(node.this), exp.Literal)
        if not (constant or isinstance(node, allowed) or _plain_pattern(node)
                or types is not None and _typed_safe(node, types)):
            return False
        if types is not None and isinstance(node, _COMPARISONS) \
                and not _comparable(_operands(node), types):
            return False
    return True


# Functions that fail on no value of the type they take (another type fails when the
# statement is planned): case folding of a text (but one past 256 MB, which takes four
# bytes a character: "invalid memory alloc request size").
_TOTAL = (exp.Lower, exp.Upper)
# … and those that return one of their arguments, converted to one type: they fail
# where a conversion can (a date past timestamp's range, a numeric past float's), so
# only where their arguments have one type (_comparable); so do comparisons
_CHOOSING = (exp.Coalesce, exp.Case, exp.Nullif, exp.Greatest, exp.Least)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In)
_NUMBERS = ("smallint", "integer", "bigint", "numeric", "real", "double precision")
# EXTRACT's fields of a date or timestamp (an infinite one gives NULL), and date_trunc's
# units of a timestamp without time zone that cannot fall below its first (a Monday at
# midnight): a year's start can, and a timestamptz is truncated in the session's zone
# (all of them fail at its ends in some zone: tried on PostgreSQL 15)
_TIME_FIELDS = frozenset({"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DOW", "ISODOW",
                          "DOY", "EPOCH"})
_CLOCK_FIELDS = frozenset({"HOUR", "MINUTE", "SECOND", "MILLISECONDS", "MICROSECONDS"})
_TRUNCATIONS = frozenset({"WEEK", "DAY"}) | _CLOCK_FIELDS
_TIMESTAMPS = ("timestamp without time zone", "timestamp with time zone")
_INTEGER_DIGITS = {"smallint": 5, "integer": 10, "bigint": 19}
_TEXTS = frozenset({"TEXT", "VARCHAR", "CHAR"})


def _typed_safe(node: exp.Expr, types: Types) -> bool:
    """A node that cannot fail given its columns' types: a total function; to_char of a
    timestamp, EXTRACT of a date or timestamp, date_trunc as above; split_part at a
    positive constant position; a match of a constant regular expression; a cast to
    text; arithmetic in numeric over integers and constants, whose digits stay far below
    numeric's limit (`0.908 * price`, a bigint price)."""
    if isinstance(node, _TOTAL):
        return True
    if isinstance(node, exp.Length):  # (of a bytea in an encoding: it may not decode)
        return node.args.get("encoding") is None
    if isinstance(node, _CHOOSING):
        simple = isinstance(node, exp.Case) and node.this is not None
        return _comparable(_operands(node), types, converted=True) and (
            not simple or _comparable([node.this, *(i.this for i in node.args["ifs"])], types))
    if isinstance(node, exp.If):  # (a CASE's WHEN, judged with its CASE)
        return isinstance(node.parent, exp.Case)
    if isinstance(node, exp.Var):  # (a field or unit, judged with its function)
        return isinstance(node.parent, exp.Extract | exp.TimestampTrunc)
    if isinstance(node, exp.Extract):
        kind, name = _kind(node.expression, types), node.this.name.upper()
        return kind in _TIMESTAMPS and name in _TIME_FIELDS | _CLOCK_FIELDS \
            or kind == "date" and name in _TIME_FIELDS
    if isinstance(node, exp.TimestampTrunc):  # (in a time zone: a timestamptz's)
        unit = node.args.get("unit")
        return _kind(node.this, types) == _TIMESTAMPS[0] and isinstance(
            unit, exp.Var | exp.Literal) and unit.name.upper() in _TRUNCATIONS \
            and node.args.get("zone") is None
    if isinstance(node, exp.Anonymous) and node.name.upper() == "TO_CHAR":
        value, *rest = node.expressions  # (a date past timestamp's last fails)
        return (len(rest) == 1 and isinstance(rest[0], exp.Literal) and rest[0].is_string
                and _kind(value, types) in _TIMESTAMPS)
    if isinstance(node, MATCHES):
        return _matches_safely(node)
    if isinstance(node, exp.SplitPart):
        position = node.args.get("part_index")
        return (isinstance(node.args.get("delimiter"), exp.Literal)
                and isinstance(position, exp.Literal) and position.is_int
                and int(position.this) > 0)
    if isinstance(node, exp.Cast):
        return node.to.this.name in _TEXTS and not node.to.expressions \
            or _digits(node, types) is not None
    if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Neg):
        return _digits(node, types) is not None
    return False


MATCHES = (exp.RegexpLike, exp.RegexpILike, exp.Substring)


def constant_pattern(node: exp.Expr) -> str | None:
    """The constant regular expression a match (`~`, `~*`, `substring(x FROM pattern)`)
    compiles, which registration compiles first (admission.check_patterns); None for
    another pattern, flags (regexp_like's, not compiled so), or SIMILAR's FOR."""
    if isinstance(node, exp.Substring):
        pattern = node.args.get("start") if node.args.get("length") is None else None
    else:
        pattern = node.expression if not node.args.get("flag") else None
    return pattern.this if isinstance(pattern, exp.Literal) and pattern.is_string else None


def _matches_safely(node: exp.Expr) -> bool:
    """A match against a constant regular expression (constant_pattern); substring
    from a constant position, for a constant length that is not negative."""
    start, length = node.args.get("start"), node.args.get("length")
    if isinstance(node, exp.Substring) and isinstance(start, exp.Literal) and not start.is_string:
        return start.is_int and (length is None or (
            isinstance(length, exp.Literal) and length.is_int and int(length.this) >= 0))
    return constant_pattern(node) is not None


def _operands(node: exp.Expr) -> list[exp.Expr]:
    """What a comparison compares, or what a CASE, COALESCE, NULLIF, GREATEST or LEAST
    converts to one type (a CASE: its results; a simple CASE's operand and WHEN values
    are compared: _typed_safe)."""
    if isinstance(node, exp.Case):
        ifs = node.args.get("ifs") or []
        return [r for r in [*(i.args.get("true") for i in ifs), node.args.get("default")]
                if r is not None]
    if isinstance(node, exp.Between):
        return [node.this, node.args["low"], node.args["high"]]
    if isinstance(node, exp.In):
        return [node.this, *node.expressions]
    return [f for f in [node.this, node.args.get("expression"), *node.expressions]
            if f is not None]


# types PostgreSQL converts into one another without an error (widening), and those it
# compares across types without converting (a date past timestamp's range is later than
# every timestamp: PostgreSQL 13 on)
_WIDENING = (("smallint", "integer", "bigint", "numeric"),
             ("text", "character varying", "character"))
_COMPARED = (*_WIDENING, ("date", *_TIMESTAMPS))
# types without an equality or order: arrays of them are compared element by element,
# and fail at the first pair to compare (json[] = json[] when their lengths agree; found
# by a helper)
_UNCOMPARED = frozenset({"json", "xml", "point", "line", "lseg", "box", "path", "polygon",
                         "circle"})


def _comparable(operands: list[exp.Expr], types: Types, converted: bool = False) -> bool:
    """Whether values of these expressions meet without a conversion that can fail: of
    one type, or of one of _COMPARED (_WIDENING where they are `converted` to one type,
    as a CASE's results are); constants are converted when the statement is planned (a
    number into any number type). Records are compared column by column, as their
    values' types come (refused). An expression whose type is not known here is let
    pass, as every comparison was before types were known."""
    if any(isinstance(unparen(o), exp.Tuple) for o in operands):
        return False
    kinds = {k for k in (_kind(o, types) for o in operands) if k}
    if any(k.split("(")[0].rstrip("[]") in _UNCOMPARED for k in kinds):
        return False
    if "number" in kinds and all(k.split("(")[0] in _NUMBERS for k in kinds - {"number"}):
        kinds.discard("number")
    return len(kinds) <= 1 or any(all(k.split("(")[0] in family for k in kinds)
                                  for family in (_WIDENING if converted else _COMPARED))


def _kind(node: exp.Expr, types: Types) -> str | None:
    """The type of an operand as far as it is known here: a column's, text for the
    text functions, numeric for EXTRACT and numeric arithmetic, "number" for a number
    constant, "" for a text constant or NULL (either takes the other operands' type)."""
    node = unparen(node)
    if isinstance(node, exp.Null) or isinstance(node, exp.Literal) and node.is_string:
        return ""
    if isinstance(node, exp.Literal):
        return "number"
    if isinstance(node, exp.Column):
        return types.get((node.table, node.name))
    if isinstance(node, exp.Lower | exp.Upper | exp.Substring | exp.SplitPart) or (
            isinstance(node, exp.Anonymous) and node.name.upper() == "TO_CHAR"):
        return "text"
    if isinstance(node, exp.Cast) and isinstance(unparen(node.this), exp.Literal):
        return {exp.DataType.Type.DATE: "date", exp.DataType.Type.TIMESTAMP: _TIMESTAMPS[0],
                exp.DataType.Type.TIMESTAMPTZ: _TIMESTAMPS[1]}.get(node.to.this)
    if isinstance(node, exp.Extract) or isinstance(node, exp.Add | exp.Sub | exp.Mul) \
            and _is_numeric(node):
        return "numeric"
    return None


def _digits(node: exp.Expr, types: Types) -> int | None:
    """The most digits the integer part of a numeric value can have, for arithmetic
    PostgreSQL does in numeric (an operand numeric) over integer columns and number
    constants; None where it may overflow (integer or float arithmetic, a numeric
    column's any value) or is not such arithmetic. numeric holds 131,072 digits."""
    node = unparen(node)
    if isinstance(node, exp.Literal) and not node.is_string:
        return max(decimal.Decimal(node.this).adjusted() + 1, 1)
    if isinstance(node, exp.Column):
        return _INTEGER_DIGITS.get(_kind(node, types))
    if isinstance(node, exp.Cast) and node.to.this in (exp.DataType.Type.DECIMAL,):
        return _digits(node.this, types) if not node.to.expressions else None
    if isinstance(node, exp.Neg):  # (an integer's can overflow: -(-2^63))
        return _digits(node.this, types) if _is_numeric(node.this) or isinstance(
            unparen(node.this), exp.Literal) else None
    if isinstance(node, exp.Add | exp.Sub | exp.Mul) and (
            _is_numeric(node.left) or _is_numeric(node.right)):
        left, right = _digits(node.left, types), _digits(node.right, types)
        if left is None or right is None:
            return None
        found = left + right if isinstance(node, exp.Mul) else max(left, right) + 1
        return found if found <= 1000 else None
    return None


def _is_numeric(node: exp.Expr) -> bool:
    """Evaluated in numeric: a decimal constant, a cast to numeric, or arithmetic with
    such an operand."""
    node = unparen(node)
    if isinstance(node, exp.Literal):
        return not node.is_string and not node.is_int
    if isinstance(node, exp.Cast):
        return node.to.this == exp.DataType.Type.DECIMAL
    if isinstance(node, exp.Neg):
        return _is_numeric(node.this)
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        return _is_numeric(node.left) or _is_numeric(node.right)
    return False
