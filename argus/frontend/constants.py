"""PostgreSQL's reading of a query's constants, asked once per registration.

Canonical predicates (`argus.frontend.canon`) must compare constants as the values PostgreSQL
compares: `d <> '2024-1-5'` and `d = '2024-01-05'` on a date column name one day, `n =
'1.0'` and `n = 1` one number, `TIMESTAMP '2024-01-01 14:00+05'` a timestamp without
zone. Only the server knows how it reads a string literal or a cast, and the type of an
expression, so `Constants` asks it — for all of a block's constants in one round trip —
and canon decides with the answers. The probe evaluates constants only: the expression
a constant is compared with is typed over NULL columns of the block's types, never run.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from fractions import Fraction

import psycopg
from psycopg import sql
from sqlglot import exp

from ..errors import QueryError, UnsupportedQueryError
from ..trees import DIALECT
from .canon import TypeOf, float_text

EXACT = {"smallint", "integer", "bigint", "numeric"}
FLOATS = {"real", "double precision"}
# Date/time input PostgreSQL reads as the current time: a query that says them would
# change its answer with the wall clock (`argus_now()` is the stream clock).
MOVING = {"now", "today", "tomorrow", "yesterday"}


class Constants:
    """A `canon.Resolve` backed by the server. Call it while canonicalizing a block: a
    constant it has not seen yet answers None and is remembered; `fetch` then asks
    PostgreSQL for every one of them, and a second canonicalization gets the answers."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.known: dict[tuple, tuple[str, str] | None] = {}
        self.missing: dict[tuple, tuple[exp.Expr, exp.Expr]] = {}

    def __call__(self, side: exp.Expr, const: exp.Expr, type_of: TypeOf
                 ) -> tuple[str, str] | None:
        if isinstance(side, (exp.Any, exp.All)):  # 'x' = ANY(tags): no value to compare
            return None  # (CASE WHEN false THEN ANY(…) is no SQL; found by a helper)
        types = tuple(sorted({(c.table, c.name, type_of(_atom(c)))
                              for c in side.find_all(exp.Column)}))
        key = (side.sql(DIALECT), const.sql(DIALECT), types)
        if key in self.known:
            return self.known[key]
        self.missing.setdefault(key, (side, const))
        return None

    def fetch(self) -> bool:
        """Ask PostgreSQL for the constants met since the last fetch; False if none."""
        if not self.missing:
            return False
        pending, self.missing = list(self.missing.items()), {}
        columns, sources = [], {}
        for (_, _, types), (side, const) in pending:
            for table, column, pg_type in types:
                sources.setdefault(table, {})[column] = pg_type
            value = (f"CASE WHEN false THEN {side.sql(DIALECT)} ELSE {const.sql(DIALECT)} END"
                     if isinstance(const, exp.Literal) and const.is_string
                     else const.sql(DIALECT))
            columns.append(sql.SQL(
                "pg_typeof(CASE WHEN false THEN {side} END)::text, pg_typeof({v})::text, "
                "to_json({v})::text, ({v})::text").format(side=sql.SQL(side.sql(DIALECT)),
                                                          v=sql.SQL(value)))
        probe = sql.SQL("SELECT {} FROM {}").format(
            sql.SQL(", ").join(columns),
            sql.SQL(", ").join(_typed_nulls(alias, types) for alias, types in sources.items())
            if sources else sql.SQL("(SELECT) AS argus_none"))
        try:
            with self.conn.transaction():
                self.conn.execute("SET LOCAL extra_float_digits = 1")  # floats exactly
                row = self.conn.execute(probe).fetchone()
        except psycopg.Error as exc:
            raise QueryError("PostgreSQL rejects a constant of the query: "
                             f"{exc.diag.message_primary or exc}") from None
        for k, (key, (_, const)) in enumerate(pending):
            side_type, pg_type, as_json, as_text = row[4 * k:4 * k + 4]
            self.known[key] = _canonical(side_type, const, pg_type, as_json, as_text)
        return True


def _atom(column: exp.Column) -> str:
    return exp.column(column.name, table=column.table, quoted=True).sql(DIALECT)


def _typed_nulls(alias: str, types: dict[str, str | None]) -> sql.Composed:
    """`(SELECT NULL::t AS c, …) AS alias`: the block's columns, typed, without rows
    worth evaluating."""
    return sql.SQL("(SELECT {}) AS {}").format(
        sql.SQL(", ").join(sql.SQL("NULL::{} AS {}").format(sql.SQL(t or "text"),
                                                            sql.Identifier(c))
                           for c, t in types.items()), sql.Identifier(alias))


def _canonical(side_type: str, const: exp.Expr, pg_type: str, as_json: str | None,
               as_text: str | None) -> tuple[str, str] | None:
    """(pg_type, canonical text) of a constant from PostgreSQL's answers, None if unknown."""
    if as_json is None:
        return None  # NULL compares as nothing: the literal stays as written
    if isinstance(const, exp.Literal) and not const.is_string:
        # a number: exact where the other side is, the float PostgreSQL compares in
        # (a float4 column with a numeric constant compares as float8), else unknown
        if side_type in EXACT:
            return ("num", str(Fraction(const.this)))
        if side_type in FLOATS:
            return ("double precision", float_text(float(Fraction(const.this))))
        return None
    if pg_type in TIME_TYPES:
        refuse_moving(const)
    value = json.loads(as_json)
    if pg_type in EXACT:  # NaN and ±Infinity are numerics outside the numbers' order
        if isinstance(value, str):
            return ("numeric", as_text)
        return ("num", str(Fraction(str(value))))
    if pg_type in FLOATS:
        return (pg_type, float_text(float(value)))
    if pg_type == "timestamp with time zone" and value not in ("infinity", "-infinity"):
        instant = dt.datetime.fromisoformat(value).astimezone(dt.timezone.utc)
        return (pg_type, instant.isoformat(sep=" "))
    if pg_type in ("date", "timestamp without time zone"):
        return (pg_type, str(value).replace("T", " "))
    if pg_type == "interval":  # (as PostgreSQL prints it: equal to the same text only;
        return ("interval text", as_text)  # canon's "interval" holds a timedelta; a helper)
    return (pg_type, as_text)


TIME_TYPES = {"date", "timestamp without time zone", "timestamp with time zone",
              "time without time zone", "time with time zone"}


# string constants however written: 'x', E'x', U&'x', $$x$$
STRINGS = (exp.ByteString, exp.UnicodeString, exp.RawString)


def _is_text(node: exp.Expr) -> bool:
    return isinstance(node, STRINGS) or isinstance(node, exp.Literal) and node.is_string


def _moving_text(node: exp.Expr) -> bool:
    """A string constant that PostgreSQL reads as the current time, or with it: alone,
    with a time ('today 00:00'), as an element of an array ('{now}') or a bound of a
    range ('[yesterday,tomorrow)'; those two passed: a helper). Read as a time, no
    other word of a text is one of these."""
    return not MOVING.isdisjoint(re.findall(r"[a-z]+", str(node.this).lower()))


def _untyped(node: exp.Expr, top: exp.Expr) -> bool:
    """No cast of its own between a node and `top`, the operand a time is read from."""
    while node is not top:
        node = node.parent
        if isinstance(node, exp.Cast) and node is not top:
            return False
    return True


def refuse_moving(const: exp.Expr) -> None:
    """'now', 'today' … read as a date or time are the wall clock's current time; so
    may be a date or time made of text at run time (concat('no', 'w')::timestamptz)."""
    operand = const
    while isinstance(operand, exp.Cast):
        operand = operand.this
    texts = [n for n in operand.walk() if _is_text(n) and _untyped(n, operand)]
    moving = any(_moving_text(n) for n in texts)
    built = bool(texts) and not _is_text(operand) and not operand.find(exp.Column)
    if moving or built:
        raise UnsupportedQueryError(
            f"the literal {const.sql(DIALECT)}" if moving else
            f"a date or time made of text in {const.sql(DIALECT)}",
            "PostgreSQL reads 'now', 'today' … as the current time, so the answer would "
            "change with the wall clock; compare with argus_now(), the stream clock, or "
            "write the date")
