"""sqlglot trees as argus reads them: one dialect, and a condition's conjuncts."""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType

from .errors import UnsupportedQueryError


# an interval's text that is one quantity of one unit ('10 minutes'), all of it
_ONE_QUANTITY = re.compile(r"\s*-?[0-9]+(?:\.[0-9]+)?\s*[a-zA-Z]+\s*")
# a field qualifier (INTERVAL '5' MINUTE) and a text it cannot cut: a whole number
_FIELDS = frozenset({"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"})
_WHOLE = re.compile(r"\s*[-+]?[0-9]+\s*")


class Argus(Postgres):
    """PostgreSQL as argus reads and writes it: sqlglot's, but
    - to_char, to_date and to_timestamp stay the calls they are written as. sqlglot turns
      their format into strftime's and back, which rewrote the text a format quotes:
      to_char(t, 'YYYY"%d"MM') came back 'YYYY"%D"MM', and the answer said 2024%D05
      where the query says 2024%d05;
    - so do regexp_like, whose flags sqlglot dropped but 'i' (regexp_like(x, '#a', 'x')
      became x ~ '#a', answering no rows for 2,003), and date_part, which it wrote as
      EXTRACT (numeric, not double precision, and defined for dates past timestamp's
      range; both found by a helper);
    - an interval's text is kept whole unless it is one quantity of one unit. sqlglot
      splits out the first quantity and its unit and drops the rest: '10 minutes 30' (10
      minutes and 30 seconds) came back '10 MINUTES', '1 day 01:30' '1 DAY', '10 minutes
      ago' '10 MINUTES' (found by a helper: a window of 10 minutes 30 answered as one of
      10 minutes);
    - a field qualifier that would cut the text (INTERVAL '1.5' HOUR is one hour in
      PostgreSQL, INTERVAL '1.5 HOUR' to sqlglot) is refused, and the word interval not
      before a text is a column's name (sqlglot read `interval + 1` as INTERVAL '1')."""

    class Parser(Postgres.Parser):
        FUNCTIONS = {name: build for name, build in Postgres.Parser.FUNCTIONS.items()
                     if name not in ("TO_CHAR", "TO_DATE", "TO_TIMESTAMP", "REGEXP_LIKE")}
        FUNCTION_PARSERS = {name: parse for name, parse in
                            Postgres.Parser.FUNCTION_PARSERS.items() if name != "DATE_PART"}

        # the tokens of a text: '…', $$…$$, U&'…' and E'…' (sqlglot's byte string)
        _TEXTS = frozenset(Postgres.Parser.STRING_PARSERS) | {TokenType.BYTE_STRING}

        def _parse_interval(self, require_interval: bool = True,
                            parse_function_unit: bool = True) -> exp.Expr | None:
            # PostgreSQL's interval literal is INTERVAL 'text' (sqlglot's also INTERVAL
            # 5 DAY): a word `interval` before anything else is a column of that name
            # (`interval + 1` was read as INTERVAL '1'; found by a helper)
            if require_interval and self._curr is not None \
                    and self._curr.token_type == TokenType.INTERVAL \
                    and (self._next is None or self._next.token_type not in self._TEXTS):
                return None
            return super()._parse_interval(require_interval, parse_function_unit)

        def _parse_interval_span(self, this: exp.Expr, parse_function_unit: bool = True
                                 ) -> exp.Interval:
            text = self._prev if self._prev is not None \
                and self._prev.token_type in self._TEXTS else None  # (the interval's, read)
            written = text.text if text is not None else None
            field = self._curr.text.upper() if self._curr is not None else None
            if written is not None and field in _FIELDS and not _WHOLE.fullmatch(written) \
                    and (self._next is None or self._next.text.upper() != "TO"):
                raise UnsupportedQueryError(
                    f"interval {exp.Literal.string(written).sql()} {field}: argus does not "
                    f"keep an interval's field qualifier (PostgreSQL cuts the text to whole "
                    f"{field.lower()}s); write the interval as its text alone")
            interval = super()._parse_interval_span(this, parse_function_unit)
            if written is not None and this.is_string and interval.this is not this \
                    and not _ONE_QUANTITY.fullmatch(written):
                interval.set("this", exp.Literal.string(written))
                interval.set("unit", None)
            return interval


DIALECT = "argus"  # every parse and every generated SQL text (sqlglot knows it by name)


def tree_of(text: str, into: type[exp.Expr] | None = None) -> exp.Expr:
    """`text` parsed as argus reads SQL, a copy the caller may change. The network keeps
    its nodes' expressions, predicates and conditions as text, which each node's
    compiler, the mapping and the optimizer read again: a text is parsed once a
    process, and each reading copies the tree (a quarter of a parse's time)."""
    return _parsed(text, into).copy()


@functools.lru_cache(maxsize=4096)
def _parsed(text: str, into: type[exp.Expr] | None) -> exp.Expr:
    return sqlglot.parse_one(text, read=DIALECT, into=into)


def qualified(table: str, column: str) -> str:
    """`"table"."column"`, quoted as PostgreSQL reads it (SQL text over a node's inputs)."""
    return exp.column(column, table=table, quoted=True).sql(DIALECT)


def folded(name: exp.Expr) -> str:
    """A name as PostgreSQL reads it: unquoted, folded to lower case."""
    if isinstance(name, exp.Column):
        name = name.this
    if isinstance(name, exp.Identifier):
        return name.this if name.quoted else name.this.lower()
    return name.name


def unparen(e: exp.Expr) -> exp.Expr:
    """The expression inside any parentheses around it."""
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    """The terms of a condition's top-level ANDs, parentheses removed ([] for none)."""
    if condition is None:
        return []
    condition = unparen(condition)
    if isinstance(condition, exp.And):
        return conjuncts(condition.left) + conjuncts(condition.right)
    return [condition]
