"""Constants as PostgreSQL compares them: exact numbers, fixed-length intervals, values
PostgreSQL resolved (their canonical text), how each is stored in the catalog, ordered
and printed back as SQL."""

from __future__ import annotations

import datetime as dt
import re
from fractions import Fraction

from sqlglot import exp

from ...trees import DIALECT, unparen


# A constant: (const_type, value). Its types: "num" (an exact number: Fraction), "interval"
# (timedelta, or _UNSAFE), "bool"; a PostgreSQL type name ("date", "double precision",
# "timestamp with time zone", "text", …) for a constant PostgreSQL resolved, its value
# the canonical text (`argus.frontend.constants`); "str" for a string literal nobody resolved
# (and catalogs written before constants were resolved), equal only to itself.
Const = tuple[str, object]

# Kinds whose distinct canonical texts are distinct values: `x = 'a'` implies `x <> 'b'`.
TEXT_EQUAL = {"bool", "boolean", "text", "character varying", "uuid"}
FLOATS = {"double precision", "real"}
_TIMES = {"date", "timestamp without time zone", "timestamp with time zone"}


def float_text(value: float) -> str:
    """A float as PostgreSQL prints it (extra_float_digits = 1: shortest exact)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text



# -- constants ---------------------------------------------------------------------------

_UNSAFE = object()  # an interval with months or years: not a fixed length
_UNITS = {"microsecond": dt.timedelta(microseconds=1), "millisecond": dt.timedelta(milliseconds=1),
          "second": dt.timedelta(seconds=1), "minute": dt.timedelta(minutes=1),
          "hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1),
          "week": dt.timedelta(weeks=1)}


def _constant(e: exp.Expr):
    """(const_type, value) of a constant expression, or None: "num" and "interval" (exact,
    for linear forms), "bool", "str" (a string literal) and "typed" (a cast of a
    literal), whose values only PostgreSQL can tell."""
    e = unparen(e)
    if isinstance(e, exp.Neg):
        inner = _constant(e.this)
        if inner is not None and inner[0] in ("num", "interval"):
            return (inner[0], _scale(inner, Fraction(-1)))
        return None
    if isinstance(e, exp.Literal):
        if e.is_string:
            return ("str", e.this)
        try:
            return ("num", Fraction(e.this))
        except (ValueError, ZeroDivisionError):
            return None
    if isinstance(e, exp.Boolean):
        return ("bool", bool(e.this))
    if isinstance(e, exp.Interval):
        return ("interval", _interval(e))
    if isinstance(e, exp.Cast) and _constant(e.this) is not None:
        if e.to.this == exp.DataType.Type.INTERVAL and isinstance(e.this, exp.Literal) \
                and e.this.is_string:
            return ("interval", _interval_text(e.this.this))
        return ("typed", e.sql(DIALECT))
    return None


def _interval(e: exp.Interval):
    text = e.this.this if isinstance(e.this, exp.Literal) else None
    if text is None:
        return _UNSAFE
    unit = e.args.get("unit")
    return _interval_text(f"{text} {unit.name}" if unit is not None else text)


def _interval_text(text: str):
    parts = re.findall(r"([-+]?\d+(?:\.\d+)?)\s*([a-z]+)", text.lower())
    if not parts or re.sub(r"[-+]?\d+(?:\.\d+)?\s*[a-z]+|\s", "", text.lower()):
        return _UNSAFE
    total = Fraction(0)  # microseconds
    for number, unit in parts:
        unit = unit.rstrip("s") if unit not in ("ms", "us") else unit
        unit = {"min": "minute", "sec": "second", "ms": "millisecond", "us": "microsecond",
                "hr": "hour", "mon": "month"}.get(unit, unit)
        if unit not in _UNITS:
            return _UNSAFE
        total += _UNITS[unit] // dt.timedelta(microseconds=1) * Fraction(number)
    if total.denominator != 1:  # PostgreSQL rounds what falls between microseconds its way
        return _UNSAFE  # ('1.5 microseconds' is 1 to it, 2 to Python; found by a helper)
    return dt.timedelta(microseconds=int(total))


def _store(const) -> tuple[str, str]:
    """A constant as (const_type, canonical text): hashable and stored in the catalog."""
    const_type, value = const
    if const_type == "num":
        return ("num", str(value))  # Fraction text: '10', '-1/3'
    if const_type == "interval":
        if value is _UNSAFE:
            return ("interval", "unsafe")
        return ("interval", _decimal(Fraction(value // dt.timedelta(microseconds=1), 10**6)))
    return (const_type, str(value))


def _parse_const(const: tuple[str, str]):
    const_type, text = const
    if const_type == "num":
        return Fraction(text)
    if const_type == "interval":
        if text == "unsafe":
            return _UNSAFE
        return dt.timedelta(microseconds=int(Fraction(text) * 10**6))
    return text


def _order_key(const: tuple[str, str]):
    """The constant's place in PostgreSQL's order of its type, or None: unordered (text
    orders by collation) or unknown."""
    const_type, text = const
    if const_type in ("num", "interval"):
        value = _parse_const(const)
        return None if value is _UNSAFE else value
    if const_type in FLOATS:  # PostgreSQL orders NaN above everything, Infinity included
        value = float(text)
        return (1, 0.0) if value != value else (0, value)
    if const_type in _TIMES:
        if text in ("infinity", "-infinity"):
            return (1 if text == "infinity" else -1, None)
        try:
            parsed = (dt.date.fromisoformat(text) if const_type == "date"
                      else dt.datetime.fromisoformat(text))
        except ValueError:  # BC, or a catalog's old form
            return None
        return (0, parsed)
    return None


def _const_text(const: tuple[str, str]) -> str:
    const_type, text = const
    if const_type == "num":
        value = Fraction(text)
        if value.denominator == 1:
            return str(value.numerator)
        return text if not _is_decimal(value) else _decimal(value)
    if const_type == "interval":
        return f"interval '{text} seconds'"
    if const_type == "bool":
        return text.upper()
    if const_type in ("typed", "sql"):  # SQL nobody resolved, as written
        return text
    quoted = "'" + text.replace("'", "''") + "'"
    if const_type == "str":
        return quoted
    if const_type in ("date", "timestamp"):  # (a catalog's old types)
        return f"{const_type.upper()} {quoted}"
    return f"{quoted}::{const_type}"


def _places(value: Fraction) -> int | None:
    """The digits after the point a finite decimal needs (None: it is not one, 1/3)."""
    d, twos, fives = value.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    return max(twos, fives) if d == 1 else None


def _is_decimal(value: Fraction) -> bool:
    return _places(value) is not None


def _decimal(value: Fraction) -> str:
    """A finite decimal's every digit (rounded to 50, 0.99…9 of 55 nines was 1: found by
    a helper)."""
    places = _places(value)
    if places is None:
        raise ValueError(f"{value} is no finite decimal")
    digits = str(abs(value * 10**places).numerator).rjust(places + 1, "0")
    whole, fraction = digits[:len(digits) - places], digits[len(digits) - places:].rstrip("0")
    return ("-" if value < 0 else "") + whole + ("." + fraction if fraction else "")


def _linear_text(terms) -> str:
    out = []
    for i, (atom, coef) in enumerate(terms):
        sign = "-" if coef < 0 else "+"
        size = abs(coef)
        factor = "" if size == 1 else (f"{_decimal(size) if _is_decimal(size) else size}*")
        if i == 0:
            out.append(("-" if sign == "-" else "") + factor + atom)
        else:
            out.append(f" {sign} {factor}{atom}")
    return "".join(out)




def _scale(const, k: Fraction):
    const_type, value = const
    if const_type == "num":
        return value * k
    if const_type == "interval":  # (one of months or years stays of no fixed length)
        return _UNSAFE if value is _UNSAFE or k.denominator != 1 else value * int(k)
    raise ValueError(f"cannot scale a {const_type} constant")
