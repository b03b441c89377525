"""A differential fuzzer of argus, in the spirit of SQLancer.

It generates typed streams full of NULLs, NaN, ±Infinity, extremes, duplicates, quotes
and unicode; literals of every type in several spellings; families of similar queries
over the whole supported algebra (so that they share nodes), registered and dropped at
random under every sharing strategy and maintenance mode; event times that advance,
arrive late, or leap far into the future; windows on the time column and on others.
After every cycle it checks, against an independent mirror of every row loaded
(tests.oracle):

- every query's answer equals its SQL run from scratch, and its changes add up to it;
- a query argus isolated after a failure, or refused as one it "cannot maintain", is
  one PostgreSQL cannot run either;
- the stream clock never runs further ahead of the server's than max_clock_lead, and
  an infinite event time is refused at load;
- every row loaded is in its stream's history, or held in the quarantine, or older than
  the horizon its stream was purged to; on even seeds the stream c is a table whose
  rows are inserted, updated and deleted by id, and its history is exactly the table;
- in a session time zone with daylight saving time, across its changes;
- ternary logic partitioning: the answer of `q` is the bag sum of the answers of
  `q AND p`, `q AND NOT p` and `q AND (p) IS NULL`;
- each cycle's changes are net: no row both retracted and inserted (tests.oracle);
- the table e has a numeric key written in other spellings by its updates and deletes
  (1, 1.0, 1.00); on seeds divisible by 3 it follows an application's table (argus
  track) that a session with extra_float_digits = 0 and another DateStyle writes;
- SQL written as people write it: WITH names reused in nested scopes, set operations in
  parentheses, named windows, stars qualified by an alias, sets of constants in FROM,
  scalar subqueries picking their row by ORDER BY … LIMIT 1.

    python -m tests.fuzz --minutes 30 [--seed N] [--dsn DSN]

prints what it did (queries, cycles, comparisons) and, on a failure, the seed and the
step that reproduce it. `tests/test_fuzz_differential.py` runs a bounded amount in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

import psycopg
from psycopg import sql

import argus
from argus import ArgusError, roles

from .oracle import LAYOUT_SETTINGS, MIRROR, Oracle, bag, same

UTC = dt.timezone.utc
START = dt.datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
# the session's time zone and where the clock starts: across daylight saving changes
ZONES = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu"]
STARTS = [START, dt.datetime(2024, 3, 10, 5, 0, tzinfo=UTC),
          dt.datetime(2024, 11, 3, 4, 30, tzinfo=UTC), dt.datetime(2024, 3, 31, 0, 0, tzinfo=UTC)]
NAN, INF = float("nan"), float("inf")

# -- data ------------------------------------------------------------------------------

POOLS = {
    "int": [0, 1, -1, 2, 3, 7, -2147483648, 2147483647],
    "bigint": [0, 1, 5, -9223372036854775808, 9223372036854775807, 42],
    "numeric": [Decimal("0"), Decimal("1.0"), Decimal("1.00"), Decimal("-0.5"), Decimal("2.25"),
                Decimal("3"), Decimal("1e20"), Decimal("NaN"), Decimal("Infinity"),
                Decimal("-Infinity")],
    "double precision": [0.0, -0.0, 0.1, 1.5, -2.5, 3.0, 1e9 + 0.1, 1e9 + 0.2, NAN, INF, -INF],
    "text": ["", "a", "A", "b", "it's", "ß", "😀", " a", "a\\b", "NULL", "a%"],
    "date": [dt.date(2024, 1, 5), dt.date(2024, 1, 6), dt.date(2024, 3, 1),
             dt.date(2023, 12, 31), dt.date(2024, 2, 29)],
    "timestamp": [dt.datetime(2024, 3, 1, 12, 0), dt.datetime(2024, 3, 1, 13, 30),
                  dt.datetime(2024, 1, 1, 0, 0), dt.datetime(2024, 3, 1, 11, 59, 59)],
    "boolean": [True, False],
}

STREAMS = {
    "a": {"id": "bigint", "k": "int", "n": "numeric", "f": "double precision", "s": "text",
          "d": "date", "ts": "timestamp", "t": "timestamptz", "b": "boolean"},
    "c": {"id": "bigint", "k": "int", "f": "double precision", "s": "text", "t": "timestamptz"},
    # read by windows only, so that purging happens (and a window on d or ts must not
    # bound what a later window on t needs)
    "w": {"id": "bigint", "k": "int", "d": "date", "ts": "timestamp", "t": "timestamptz",
          "u": "timestamptz"},
}
TIME = "t"
# a table keyed by a numeric id, whose updates and deletes spell the key otherwise
TABLE_E = {"id": "numeric", "v": "int", "f": "double precision"}
KEY_SPELLINGS = ["1", "1.0", "1.00"]  # Decimal(key).quantize(...) by these exponents


def spellings(pg_type: str, value) -> list[str]:
    """SQL literals for one value, written the ways people write them."""
    if pg_type in ("int", "bigint"):
        return [str(value), f"'{value}'", f"'{'0' if value >= 0 else ''}{value}'",
                f"{value}.0", f"CAST('{value}' AS {pg_type})"]
    if pg_type == "numeric":
        text = str(value)
        if not value.is_finite():
            return [f"'{text}'", f"'{text}'::numeric"]
        padded = f"{text}0" if "." in text else text if "E" in text else f"{text}.0"
        return [text, f"'{text}'", f"'{value.normalize()}'", padded,
                f"CAST('{text}' AS numeric)"]
    if pg_type == "double precision":
        if math.isnan(value) or math.isinf(value):
            name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return [f"'{name}'", f"'{name.lower()}'::float8"]
        text = repr(value)
        return [text, f"'{text}'", f"{text}00000000000000001" if "." in text else text,
                f"CAST('{text}' AS double precision)"]
    if pg_type == "text":
        quoted = "'" + value.replace("'", "''") + "'"
        return [quoted, f"{quoted}::text", f"CAST({quoted} AS text)"]
    if pg_type == "date":
        return [f"DATE '{value}'", f"'{value.year}-{value.month}-{value.day}'",
                f"'{value}'::date", f"'{value:%b} {value.day}, {value.year}'"]
    if pg_type == "timestamp":
        return [f"TIMESTAMP '{value:%Y-%m-%d %H:%M:%S}'", f"'{value:%Y-%m-%d %H:%M}'",
                f"'{value:%Y-%m-%d %H:%M:%S}+05'"]  # the offset is ignored by timestamp
    if pg_type == "timestamptz":
        shifted = value.astimezone(dt.timezone(dt.timedelta(hours=1)))
        return [f"'{value:%Y-%m-%d %H:%M}+00'", f"'{shifted:%Y-%m-%d %H:%M}+01'",
                f"TIMESTAMPTZ '{value:%Y-%m-%d %H:%M:%S} UTC'"]
    if pg_type == "boolean":
        return ["true" if value else "false", "'t'" if value else "'f'",
                "'yes'" if value else "'no'"]
    raise ValueError(pg_type)


# -- queries ---------------------------------------------------------------------------

COMPARE = ["=", "<>", "<", "<=", ">", ">="]


@dataclass
class Gen:
    rng: random.Random
    clock: dt.datetime = START

    def value(self, pg_type: str):
        if self.rng.random() < 0.15:
            return None
        if pg_type == "timestamptz":
            return self.clock + dt.timedelta(minutes=self.rng.randint(-90, 30))
        return self.rng.choice(POOLS[pg_type])

    def literal(self, pg_type: str) -> str:
        value = self.value(pg_type)
        while value is None:
            value = self.value(pg_type)
        return self.rng.choice(spellings(pg_type, value))

    def atom(self, alias: str, columns: dict[str, str]) -> str:
        column = self.rng.choice(sorted(columns))
        pg_type, ref = columns[column], f"{alias}.{column}"
        kind = self.rng.random()
        if kind < 0.1:
            return f"{ref} IS {self.rng.choice(['', 'NOT '])}NULL"
        if kind < 0.2 and pg_type != "boolean":
            low, high = sorted((self.literal(pg_type), self.literal(pg_type)))
            return f"{ref} BETWEEN {low} AND {high}"
        if kind < 0.3:
            return f"{ref} IN ({', '.join(self.literal(pg_type) for _ in range(3))})"
        if kind < 0.4:  # the constant on the left
            return f"{self.literal(pg_type)} {self.rng.choice(COMPARE)} {ref}"
        op = "=" if pg_type == "boolean" else self.rng.choice(COMPARE)
        return f"{ref} {op} {self.literal(pg_type)}"

    def predicate(self, alias: str, columns: dict[str, str], depth: int = 2) -> str:
        text = self.atom(alias, columns)
        for _ in range(self.rng.randint(0, depth)):
            other = self.atom(alias, columns)
            text = f"({text} {self.rng.choice(['AND', 'OR'])} {other})"
        return f"NOT ({text})" if self.rng.random() < 0.1 else text

    def window(self, alias: str, column: str) -> str:
        op = self.rng.choice([">", ">=", "<="])
        minutes = self.rng.choice([10, 30, 60, 600])
        return f"{alias}.{column} {op} argus_now() - interval '{minutes} minutes'"

    def family(self) -> list[tuple[str, str]]:
        """Queries of one shape differing in their literals (and so sharing nodes):
        (role, SQL); role 'tlp' marks a partition q, q∧p, q∧¬p, q∧p IS NULL."""
        a, c = STREAMS["a"], STREAMS["c"]
        shape = self.rng.choice(["select", "variants", "tlp", "aggregate", "global", "join",
                                 "left", "right", "full", "semi", "anti", "exists",
                                 "distinct", "setop", "window", "clock", "groups_anti", "nested",
                                 "top", "poison", "holistic", "limit", "lateral",
                                 "lateral_join", "recursive", "spelled", "scoped", "written"])
        size = self.rng.randint(1, 3)
        # a family's windows are on one column: the time column, or not (a stream's
        # history may be purged only by windows on its time column)
        window_column = self.rng.choice(["t", "t", "u", "d", "ts"])
        if shape == "variants":  # one value, spelled and compared in several ways: the
            # literals canonicalization must tell equal or apart, under sharing
            column = self.rng.choice(["f", "f", "d", "t", "n", "k", "ts", "s"])
            pg_type = a[column]
            value = self.rng.choice([0.1, 1e9 + 0.1, 1.5]) if column == "f" else None
            while value is None:
                value = self.value(pg_type)
            ops = ["=", self.rng.choice([">", ">=", "<", "<="]), "<>", self.rng.choice(COMPARE)]
            return [("variants", f"SELECT x.id, x.{column} FROM a x WHERE x.{column} {op} "
                                 f"{self.rng.choice(spellings(pg_type, value))}")
                    for op in self.rng.sample(ops, len(ops))]
        if shape == "tlp":
            base = f"SELECT x.id, x.k, x.s FROM a x WHERE {self.predicate('x', a, 1)}"
            p = self.predicate("x", a, 1)
            return [("tlp", base), ("tlp", f"{base} AND ({p})"),
                    ("tlp", f"{base} AND NOT ({p})"), ("tlp", f"{base} AND ({p}) IS NULL")]
        out = []
        for _ in range(size):
            where = self.predicate("x", a)
            x = self.rng.choice(["n", "f", "k", "id"])
            if shape == "select":
                q = f"SELECT x.id, x.n, x.f, x.s FROM a x WHERE {where}"
            elif shape == "aggregate":
                having = f" HAVING count(*) > {self.rng.randint(0, 2)}" \
                    if self.rng.random() < 0.4 else ""
                if self.rng.random() < 0.5:  # over a window: rows leave the groups again
                    column = window_column if window_column in a else "t"
                    where = f"{self.window('x', column)} AND {where}"
                q = (f"SELECT x.k, count(*) AS cnt, sum(x.{x}) AS total, avg(x.{x}) AS mean, "
                     f"min(x.{x}) AS lo, max(x.{x}) AS hi, stddev(x.{x}) AS sd, "
                     f"sum(x.{x}) FILTER (WHERE {self.predicate('x', a)}) AS some "
                     f"FROM a x WHERE {where} GROUP BY x.k{having}")
            elif shape == "holistic":  # groups computed again (nodes.window, grouped)
                if self.rng.random() < 0.5:  # over a window: rows leave the groups again
                    column = window_column if window_column in a else "t"
                    where = f"{self.window('x', column)} AND {where}"
                # (ordered by the whole row, values' spellings too: equal rows alone tie)
                total = "x.id, x.s, x.n::text, x.f::text, x.k, x.d, x.ts, x.t, x.b"
                q = (f"SELECT x.k, string_agg(x.s, ',' ORDER BY {total}) AS l, "
                     f"sum(DISTINCT x.{x}) AS sd, percentile_disc(0.5) WITHIN GROUP "
                     f"(ORDER BY x.{x}) AS med, array_agg(x.n ORDER BY {total}) FILTER "
                     f"(WHERE {self.predicate('x', a)}) AS ns, count(*) AS cnt "
                     f"FROM a x WHERE {where} GROUP BY x.k")
            elif shape == "global":
                q = (f"SELECT count(x.{x}) AS cnt, sum(x.{x}) AS total, var_pop(x.{x}) AS v "
                     f"FROM a x WHERE {where}")
            elif shape in ("join", "left", "right", "full"):
                join = {"join": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN",
                        "full": "FULL JOIN"}[shape]
                band = " AND y.t BETWEEN x.t AND x.t + interval '30 minutes'" \
                    if self.rng.random() < 0.4 else ""
                q = (f"SELECT x.id, y.id AS yid, y.f FROM a x {join} c y ON y.k = x.k{band} "
                     f"WHERE {where}") if shape in ("join", "left") else (
                    f"SELECT x.id, y.id AS yid, y.f FROM (SELECT * FROM a x WHERE {where}) x "
                    f"{join} c y ON y.k = x.k{band}") if self.rng.random() < 0.5 else (
                    # after another join: the joins before it are its left side
                    f"SELECT x.id, z.id AS zid, y.id AS yid, y.f FROM (SELECT * FROM a x "
                    f"WHERE {where}) x JOIN c z ON z.k = x.k {join} c y ON y.k = x.k{band}")
            elif shape in ("semi", "anti"):
                neg = "NOT " if shape == "anti" else ""
                q = (f"SELECT x.id, x.s FROM a x WHERE {where} AND {neg}EXISTS (SELECT 1 FROM "
                     f"c y WHERE y.k = x.k AND {self.predicate('y', c, 0)})")
            elif shape == "exists":  # (a correlated UNION is an OR; the others keyed)
                op = self.rng.choice(["UNION", "INTERSECT", "EXCEPT", "EXCEPT ALL"])
                q = (f"SELECT x.id FROM a x WHERE {where} AND EXISTS (SELECT 1 FROM c y "
                     f"WHERE {self.predicate('y', c, 0)})") if self.rng.random() < 0.3 else (
                    f"SELECT x.id FROM a x WHERE {where} AND {self.rng.choice(['', 'NOT '])}"
                    f"EXISTS (SELECT y.s FROM c y WHERE y.k = x.k {op} SELECT z.s FROM c z "
                    f"WHERE z.{'id = x.id' if op == 'UNION' else 'k = x.k'} AND "
                    f"{self.predicate('z', c, 0)})"
                ) if self.rng.random() < 0.3 else (
                    f"SELECT x.id, x.k {self.rng.choice(['IN', 'NOT IN'])} (SELECT y.k FROM c y "
                    f"WHERE {self.predicate('y', c, 0)}) AS hit FROM a x WHERE {where} OR "
                    f"x.k {self.rng.choice(['IN', 'NOT IN'])} (SELECT y.k FROM c y WHERE "
                    f"{self.predicate('y', c, 0)})")
            elif shape == "distinct":
                q = f"SELECT DISTINCT x.k, x.b FROM a x WHERE {where}"
            elif shape == "top":  # Top-K per group, ties broken by the id
                x = self.rng.choice(["n", "f"])
                q = (f"SELECT w.k, w.id, w.{x} FROM (SELECT x.k, x.id, x.{x}, row_number() "
                     f"OVER (PARTITION BY x.k ORDER BY x.{x} DESC NULLS LAST, x.id) AS rn "
                     f"FROM a x WHERE {where}) w WHERE w.rn <= {self.rng.randint(1, 3)}")
            elif shape == "lateral":  # a set-returning function per row (frontend.lateral)
                q = (f"SELECT x.id, u.v FROM a x CROSS JOIN LATERAL unnest(ARRAY[x.k, x.k % 3, "
                     f"NULL]) AS u(v) WHERE {where}") if self.rng.random() < 0.5 else (
                    f"SELECT w.v, count(*) AS cnt FROM a x, LATERAL generate_series(0, "
                    f"abs(x.k) % 4) AS w(v) WHERE {where} GROUP BY w.v")
            elif shape == "lateral_join":  # a correlated LATERAL subquery (frontend.lateral_joins)
                side = self.rng.choice(["CROSS JOIN", "LEFT JOIN"])
                on = " ON TRUE" if side == "LEFT JOIN" else ""
                inner = self.rng.choice([
                    "SELECT count(*) AS v, max(y.f) AS m FROM c y WHERE y.k = x.k",
                    f"SELECT y.id AS v, y.f AS m FROM c y WHERE y.k = x.k AND "
                    f"{self.predicate('y', c, 0)} ORDER BY y.f DESC NULLS LAST, y.id "
                    f"LIMIT {self.rng.randint(1, 3)}",
                    "SELECT length(y.s) AS v, count(*) AS m FROM c y WHERE y.k = x.k "
                    "GROUP BY length(y.s)",
                    # (y.k = x.k - 1 overflowed for k = -2147483648 where PostgreSQL, lazily,
                    # computed it for no row: a known difference, docs/sql.md)
                    "SELECT DISTINCT y.k % 3 AS v, 0 AS m FROM c y WHERE y.k = x.k"])
                q = (f"SELECT x.id, l.v, l.m FROM a x {side} LATERAL ({inner}) l{on} "
                     f"WHERE {where}")
            elif shape == "recursive":  # WITH RECURSIVE over a and c (nodes.recursive)
                step = self.rng.choice([
                    "SELECT r.x, y.k FROM r JOIN c y ON y.k % 7 = r.y % 7 AND y.id > r.x",
                    f"SELECT r.x, y.k FROM r JOIN c y ON y.k = r.y + 1 WHERE "
                    f"{self.predicate('y', c, 0)}",
                    "SELECT r.y, r.x FROM r JOIN a z ON z.k = r.x"])
                q = (f"WITH RECURSIVE r(x, y) AS (SELECT x.k, x.k % 5 FROM a x WHERE {where} "
                     f"UNION {step}) SELECT "
                     + self.rng.choice(["x, y FROM r", "x, count(*) AS n FROM r GROUP BY x",
                                        "DISTINCT y FROM r WHERE x < y"]))
            elif shape == "spelled":  # the table whose key is written several ways
                q = self.rng.choice([
                    "SELECT e.id::text AS k, count(*) AS n FROM e GROUP BY e.id::text",
                    "SELECT DISTINCT e.id::text AS k FROM e",
                    f"SELECT e.id::text AS k, e.v, e.f FROM e "
                    f"WHERE e.v > {self.rng.randint(-2, 5)}",
                    "SELECT x.k, e.id FROM a x JOIN e ON e.id = x.k"])
            elif shape == "scoped":  # a WITH name reused inside a subquery, or a stream's
                inner = self.rng.choice(["c", "a"])
                q = self.rng.choice([
                    f"WITH m AS (SELECT x.k FROM a x WHERE {where}) SELECT k FROM (WITH m AS "
                    f"(SELECT y.k FROM {inner} y) SELECT k FROM m) s UNION ALL SELECT k FROM m",
                    f"WITH m AS (SELECT x.k FROM a x WHERE {where}) SELECT k FROM m WHERE k IN "
                    f"(WITH m AS (SELECT y.k + 0 AS k FROM c y) SELECT k FROM m)",
                    f"WITH c AS (SELECT x.k, x.id FROM a x WHERE {where}) SELECT k FROM (WITH a "
                    f"AS (SELECT k FROM c) SELECT k FROM a) s",
                    f"WITH m AS (SELECT x.k FROM a x WHERE {where}), n AS (SELECT y.k FROM c y) "
                    f"SELECT k FROM m AS z WHERE k IN (SELECT k FROM n AS z)"])
            elif shape == "written":  # constructs as people write them
                q = self.rng.choice([
                    f"(SELECT x.k FROM a x WHERE {where} UNION SELECT y.k FROM c y) ORDER BY "
                    f"k NULLS LAST LIMIT {self.rng.randint(1, 3)}",
                    f"SELECT * FROM ((SELECT x.k FROM a x WHERE {where}) UNION ALL "
                    f"(SELECT y.k FROM c y)) s",
                    f"SELECT x.id, sum(x.k) OVER w AS s FROM a x WHERE {where} "
                    f"WINDOW w AS (PARTITION BY x.b ORDER BY x.id, x.k)",
                    f"SELECT X.*, Y.f AS yf FROM (SELECT x.id, x.k FROM a x WHERE {where}) AS X "
                    f"JOIN c Y ON Y.k = X.k",
                    f"SELECT x.id, g.i FROM a x, generate_series(0, 2) AS g(i) WHERE {where} "
                    f"AND x.k > g.i",
                    f"SELECT x.id, v.w FROM a x, (VALUES (1, 'one'), (2, 'two')) AS v(j, w) "
                    f"WHERE x.k = v.j AND {where}",
                    f"SELECT x.id, (SELECT y.f FROM c y WHERE y.k = x.k ORDER BY y.f DESC NULLS "
                    f"LAST, y.id LIMIT 1) AS latest FROM a x WHERE {where}"])
            elif shape == "limit":  # a global Top-K (ORDER BY … LIMIT), ties broken by id
                x = self.rng.choice(["n", "f", "k"])
                if self.rng.random() < 0.5:  # over a window: rows leave again
                    column = window_column if window_column in a else "t"
                    where = f"{self.window('x', column)} AND {where}"
                offset = f" OFFSET {self.rng.randint(1, 2)}" if self.rng.random() < 0.3 else ""
                q = (f"SELECT x.id, x.{x} FROM a x WHERE {where} ORDER BY x.{x} DESC NULLS "
                     f"LAST, x.id LIMIT {self.rng.randint(1, 4)}{offset}")
            elif shape == "setop":
                op = self.rng.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "EXCEPT ALL"])
                q = (f"SELECT x.k FROM a x WHERE {where} {op} "
                     f"SELECT y.k FROM c y WHERE {self.predicate('y', c, 0)}")
            elif shape == "window":
                q = (f"SELECT x.id, x.k FROM w x WHERE {self.window('x', window_column)} AND "
                     f"{self.predicate('x', STREAMS['w'], 1)}")
            elif shape == "clock":
                q = f"SELECT x.id, argus_now() - x.t AS age FROM a x WHERE {where}"
            elif shape == "groups_anti":
                q = (f"SELECT g.id FROM (SELECT x.id, count(*) AS n FROM a x WHERE {where} "
                     f"GROUP BY x.id) g WHERE g.n > 1 AND NOT EXISTS (SELECT 1 FROM "
                     f"(SELECT y.id FROM c y GROUP BY y.id) h WHERE h.id = g.id + 1)")
            elif shape == "poison":  # alone, so that PostgreSQL divides every row too;
                # the rare row whose id is its magic number breaks it
                q = (f"SELECT x.id, x.k FROM a x WHERE 100 / (x.id - "
                     f"{self.rng.randint(1000, 1004)}) < {self.rng.randint(0, 5)}")
            else:  # nested
                q = (f"SELECT g.k, g.m FROM (SELECT x.k, max(x.f) AS m, count(*) AS n FROM a x "
                     f"WHERE {where} GROUP BY x.k) g WHERE g.n >= {self.rng.randint(1, 2)}")
            out.append((shape, q))
        return out

    def rows(self, stream: str) -> list[tuple]:
        columns = STREAMS[stream]
        rows = []
        for _ in range(self.rng.randint(1, 12)):
            row = {c: self.value(t) for c, t in columns.items()}
            row["id"] = (self.rng.randint(1000, 1004) if self.rng.random() < 0.03
                         else self.rng.randint(1, 50))
            if self.rng.random() < 0.02:  # far in the future: quarantined
                row[TIME] = dt.datetime(2204, 1, 1, tzinfo=UTC)
            rows.append(tuple(row[c] for c in columns))
            if self.rng.random() < 0.2:
                rows.append(rows[-1])  # a duplicate
        return rows


# -- the run ---------------------------------------------------------------------------

@dataclass
class Stats:
    queries: int = 0
    refused: Counter = field(default_factory=Counter)
    isolated: int = 0
    cycles: int = 0
    comparisons: int = 0
    drops: int = 0
    quarantined: int = 0
    migrated: int = 0

    def line(self) -> str:
        return (f"{self.queries} queries registered ({sum(self.refused.values())} refused), "
                f"{self.drops} dropped, {self.migrated} migrated, "
                f"{self.isolated} isolated after a failure, "
                f"{self.cycles} cycles, {self.comparisons} comparisons with PostgreSQL, "
                f"{self.quarantined} rows quarantined")


class FuzzFailure(AssertionError):
    pass


class Fuzzer:
    def __init__(self, dsn: str, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.gen = Gen(self.rng, self.rng.choice(STARTS))
        self.zone = self.rng.choice(ZONES)
        self.handles = {s: argus.connect(dsn, sharing=s) for s in ("selection", "match-plan",
                                                                   "none")}
        for handle in self.handles.values():  # the oracle's from scratch in that zone
            handle.conn.execute(sql.SQL("SET TimeZone = {}").format(sql.Literal(self.zone)))
        self.db = self.handles["selection"]
        self.db.configure(time_zone=self.zone)  # and argus's registrations and cycles
        self.oracle = Oracle(self.db)
        self.mixed = False
        self.stats = Stats()
        self.names = itertools.count(1)
        self.tlp: list[list[str]] = []
        self.log: list[str] = [f"time zone {self.zone}, clock from {self.gen.clock}"]
        # on even seeds c is a table (argus.tables): its rows inserted, updated and
        # deleted by id, the changes reaching every shape that reads it
        self.table = seed % 2 == 0
        self.keys: set[int] = set()  # the table's ids, after every load so far
        self.log.append("c is a table" if self.table else "c is a stream")
        for name, columns in STREAMS.items():
            if name == "c" and self.table:
                self.oracle.create_table(name, columns, primary_key="id")
            else:
                self.oracle.create_stream(name, columns, time_column=TIME)
        # e: keyed by a numeric id; on seeds divisible by 3 it follows an application's
        # table, written by a session whose settings print values otherwise
        self.tracked = seed % 3 == 0
        self.e_keys: set[int] = set()
        self.app = None
        if self.tracked:
            self.db.conn.execute("CREATE TABLE public.e_app (id numeric PRIMARY KEY, v int, "
                                 "f double precision)")
            self.db.track("public.e_app", "e")
            # the oracle's mirror: the application's table as each cycle claimed it
            # (a registration's claiming cycle too)
            self.db.conn.execute(sql.SQL("CREATE TABLE {} (LIKE public.e_app)").format(
                sql.Identifier(MIRROR, "e")))
            self.oracle.followed.append(self._refresh_e)
            self.app = psycopg.connect(dsn, autocommit=True)
            self.app.execute("SET extra_float_digits = 0")
            self.app.execute("SET DateStyle = 'SQL, DMY'")
            self.log.append("e follows public.e_app (extra_float_digits = 0)")
        else:
            self.oracle.create_table("e", TABLE_E, primary_key="id")

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()
        if self.app is not None:
            self.app.close()

    def step(self) -> None:
        action = self.rng.choices(["load", "cycle", "register", "drop", "mode", "migrate"],
                                  weights=[30, 25, 25, 8, 3, 5])[0]
        getattr(self, action)()

    def load(self) -> None:
        self.gen.clock += dt.timedelta(minutes=self.rng.randint(0, 20))
        stream = self.rng.choice([*sorted(STREAMS), "e"])
        if stream == "c" and self.table:
            return self.change()
        if stream == "e":
            return self.change_e()
        if self.rng.random() < 0.03:  # an infinite event time: refused, nothing loaded
            row = tuple("infinity" if c == TIME else None for c in STREAMS[stream])
            try:
                self.db.insert(stream, [row])
            except argus.LoadError:
                pass
            else:
                raise FuzzFailure(f"stream {stream} took an infinite event time")
        rows = self.gen.rows(stream)
        self.log.append(f"load {stream} {rows!r}")
        self.oracle.insert(stream, rows)

    def change(self) -> None:
        """Inserts of new ids, updates of present ones (to any values but the id),
        deletes of present and absent ones: one kind per load, each id once."""
        op = self.rng.choice(["insert", "insert", "update", "delete"] if self.keys
                             else ["insert"])
        rows = list({row[0]: row for row in self.gen.rows("c")}.values())
        if op == "insert":
            fresh = iter(sorted(set(range(1, 200)) - self.keys))
            rows = [(next(fresh), *row[1:]) for row in rows]
            self.keys |= {row[0] for row in rows}
            self.log.append(f"insert c {rows!r}")
            self.oracle.insert("c", rows)
        elif op == "update":
            keys = self.rng.sample(sorted(self.keys), min(len(self.keys), len(rows)))
            rows = [(key, *row[1:]) for key, row in zip(keys, rows)]
            self.log.append(f"update c {rows!r}")
            self.oracle.update("c", rows)
        else:
            keys = self.rng.sample(sorted(self.keys), min(len(self.keys), self.rng.randint(1, 4)))
            keys += [self.rng.randint(500, 510)] if self.rng.random() < 0.3 else []
            self.keys -= set(keys)
            self.log.append(f"delete c {keys!r}")
            self.oracle.delete("c", keys)

    def spelled(self, key: int) -> Decimal:
        """A key as one of its spellings: 1, 1.0 or 1.00."""
        return Decimal(key).quantize(Decimal(self.rng.choice(KEY_SPELLINGS)))

    def change_e(self) -> None:
        """The table e: new keys, present keys updated with their key spelled anew (and
        floats nearly equal: 0.3 then 0.30000000000000004), present and absent keys
        deleted in another spelling; by argus's own API, or as SQL on the application's
        table it follows."""
        op = self.rng.choice(["insert", "update", "update", "delete"] if self.e_keys
                             else ["insert"])
        floats = [0.3, 0.30000000000000004, 1.0, -0.0, 0.0, None]
        if op == "insert":
            keys = self.rng.sample(sorted(set(range(1, 30)) - self.e_keys),
                                   min(3, 29 - len(self.e_keys)))
            rows = [(self.spelled(k), self.rng.randint(-2, 6), self.rng.choice(floats))
                    for k in keys]
            self.e_keys |= set(keys)
        else:
            keys = self.rng.sample(sorted(self.e_keys), min(len(self.e_keys), 3))
            rows = [(self.spelled(k), self.rng.randint(-2, 6), self.rng.choice(floats))
                    for k in keys]
            if op == "delete":
                rows = [row[0] for row in rows] + ([Decimal(400)] if self.rng.random() < 0.3
                                                   else [])
                self.e_keys -= set(keys)
        self.log.append(f"{op} e {rows!r}")
        if not self.tracked:
            getattr(self.oracle, op)("e", rows)
            return
        with self.app.transaction():
            for row in rows:
                if op == "insert":
                    self.app.execute("INSERT INTO e_app VALUES (%s, %s, %s)", row)
                elif op == "update":
                    self.app.execute("UPDATE e_app SET (id, v, f) = (%s, %s, %s) WHERE id = %s",
                                     (*row, row[0]))
                else:
                    self.app.execute("DELETE FROM e_app WHERE id = %s", (row,))

    def register(self) -> None:
        family = self.gen.family()
        names = []
        for role, query in family:
            name = f"q{next(self.names)}"
            # variants under selection sharing: the new query reads an earlier one's node
            handle = self.handles["selection" if role == "variants" and self.rng.random() < 0.8
                                  else self.rng.choice(sorted(self.handles))]
            self.log.append(f"register {name} [{handle.sharing.strategy}] {query}")
            try:
                self.oracle.db = handle
                self.oracle.register(name, query)
            except ArgusError as exc:
                self.stats.refused[re.sub(r"'[^']*'|\d+", "…", str(exc))[:70]] += 1
                self.log.append(f"  refused: {exc}")
                if "cannot be maintained" in str(exc):  # not a construct argus refuses
                    self._check_impossible(query, f"argus refused it ({exc})")
                continue
            finally:
                self.oracle.db = self.db
            self.stats.queries += 1
            self.stats.comparisons += 1
            names.append(name)
        if family[0][0] == "tlp" and len(names) == 4:
            self.tlp.append(names)

    def drop(self) -> None:
        names = [q.name for q in self.db.queries()]
        if names:
            name = self.rng.choice(names)
            self.log.append(f"drop {name}")
            self.oracle.unregister(name)
            self.tlp = [f for f in self.tlp if name not in f]
            self.stats.drops += 1

    def migrate(self) -> None:
        """A query moved to another join layout or evaluation (argus.adapt), forced or
        as the optimizer decides: its answer and last changes read the same, and every
        query stays exact."""
        names = [q.name for q in self.db.queries() if q.status == "ok"]
        if not names:
            return
        name = self.rng.choice(names)
        force = self.rng.random() < 0.7
        # some switch between incremental and re-run (argus.nodes.rerun)
        evaluate = self.rng.choices([None, "rerun", "incremental"], weights=[8, 1, 1])[0]
        strategy = self.rng.choice(["moving-state", "jisc"])  # (JISC: joins left lazy)
        self.db.configure(migration=strategy)
        before = bag(self.db.results(name)), bag(self.db.new_results(name))
        self.log.append(f"migrate {name} force={force} evaluate={evaluate} {strategy}")
        try:
            (decision,) = self.db.migrate([name], force=force, evaluate=evaluate)
        except ArgusError as exc:  # heuristic layout; or a row the new order fails on
            self.log.append(f"  not migrated: {exc}")
        else:
            self.stats.migrated += decision.migrated
            self.log.append(f"  {decision.why}")
        after = bag(self.db.results(name)), bag(self.db.new_results(name))
        if not (same(after[0], before[0]) and same(after[1], before[1])):
            raise FuzzFailure(f"query {name} read differently across its migration")
        self.oracle.check()

    def mode(self) -> None:
        maintenance = self.rng.choice(["auto", "apply", "rebuild", "mixed"])
        self.mixed = maintenance == "mixed"  # each node's choice at random, cycle by cycle
        locked = self.rng.random() < 0.5
        layout = self.rng.choice(LAYOUT_SETTINGS)  # the layout of the nodes made next
        self.log.append(f"configure maintenance={maintenance} locked={locked} {layout}")
        self.db.configure(maintenance="auto" if self.mixed else maintenance,
                          truncate_inbox_bytes=1 if locked else 1 << 40,
                          **layout)

    def _refresh_e(self) -> None:
        """The mirror of e after a cycle: the application's table, every change to it
        committed before (this process writes it between cycles only)."""
        mirror = sql.Identifier(MIRROR, "e")
        self.db.conn.execute(sql.SQL("DELETE FROM {}").format(mirror))
        self.db.conn.execute(sql.SQL("INSERT INTO {} SELECT * FROM public.e_app").format(mirror))

    def cycle(self) -> None:
        self.log.append("cycle")
        if self.mixed:
            self.oracle.rig_maintenance(lambda node_id: self.rng.random() < 0.5)
        report = self.oracle.run()  # answers and changes of every query not isolated
        self.stats.cycles += 1
        self.stats.comparisons += len(self.oracle.accumulated)
        self.stats.quarantined += sum(report.quarantined.values())
        for name in report.failed:
            self.stats.isolated += 1
            self._check_isolated(name)
        self._check_histories()
        self._check_partitions()
        self._check_clock()

    # -- the checks beyond the oracle's ---------------------------------------------

    def _check_isolated(self, name: str) -> None:
        """argus isolates a query only when PostgreSQL cannot run it either."""
        self._check_impossible(self.db.query(name).sql,
                               f"query {name} was isolated ({self.db.query(name).error})")

    def _check_impossible(self, query: str, what: str) -> None:
        try:
            self.oracle.expected(query)
        except psycopg.Error:
            return
        raise FuzzFailure(f"{what}, but PostgreSQL runs it from scratch: {query}")

    def _check_clock(self) -> None:
        ahead, lead = self.db.conn.execute(
            "SELECT argus.clock_now() - now(), max_clock_lead FROM argus_catalog.settings"
        ).fetchone()
        if lead is not None and ahead is not None and ahead > lead:
            raise FuzzFailure(f"the stream clock ran {ahead} ahead of the server's")

    def _check_histories(self) -> None:
        """Every row loaded is in its stream's history, except rows older than the
        horizon the stream was purged to (rows held back never reached the mirror)."""
        for stream in [*STREAMS, "e"]:
            horizon, column = self.db.conn.execute(
                "SELECT st.horizon, st.horizon_column FROM argus_catalog.streams s "
                "JOIN argus_catalog.node_stats st USING (node_id) WHERE s.name = %s",
                (stream,)).fetchone()
            purged = (sql.SQL("{} <= %s::timestamptz").format(sql.Identifier("m", column or TIME))
                      if stream != "e" else sql.SQL("%s::timestamptz IS NULL AND false"))
            missing = self.db.conn.execute(sql.SQL(
                "SELECT m.*, {p} FROM (SELECT * FROM {m} EXCEPT ALL "
                "SELECT * FROM {h}) AS m").format(
                    m=sql.Identifier(MIRROR, stream), h=sql.Identifier("argus_streams", stream),
                    p=purged), (horizon,)).fetchall()
            lost = [row[:-1] for row in missing if not row[-1]]
            if lost:
                raise FuzzFailure(f"stream {stream} lost rows it was never purged of "
                                  f"(horizon {column} > {horizon}): {lost[:5]}")
            extra = self.db.conn.execute(sql.SQL(
                "SELECT count(*) FROM (SELECT * FROM {h} EXCEPT ALL SELECT * FROM {m}) AS e")
                .format(m=sql.Identifier(MIRROR, stream),
                        h=sql.Identifier("argus_streams", stream))).fetchone()[0]
            if extra:
                raise FuzzFailure(f"stream {stream} holds {extra} rows never loaded (or twice)")

    def _check_partitions(self) -> None:
        failed = self.oracle.failed()
        for q, with_p, without_p, unknown in self.tlp:
            if failed & {q, with_p, without_p, unknown}:
                continue
            parts = sum((bag(self.db.results(n)) for n in (with_p, without_p, unknown)),
                        Counter())
            if not same(parts, bag(self.db.results(q))):
                raise FuzzFailure(f"ternary logic partitioning: {with_p}, {without_p} and "
                                  f"{unknown} do not add up to {q}")
            self.stats.comparisons += 1


def run(dsn: str, seed: int, *, steps: int | None = None, seconds: float | None = None,
        out=sys.stdout) -> Stats:
    """Fuzz one database for `steps` steps or `seconds`; raises FuzzFailure (with the
    seed, the step and the actions so far) on the first wrong answer."""
    fuzzer = Fuzzer(dsn, seed)
    deadline = time.monotonic() + seconds if seconds else None
    try:
        for number in itertools.count(1):
            if (steps is not None and number > steps) or (deadline and time.monotonic() > deadline):
                break
            try:
                fuzzer.step()
            except (AssertionError, Exception) as exc:
                recent = "\n  ".join(entry[:400] for entry in fuzzer.log[-25:])
                raise FuzzFailure(f"seed {seed}, step {number}: {type(exc).__name__}: {exc}\n"
                                  f"last actions:\n  {recent}") from exc
        fuzzer.cycle()
    finally:
        fuzzer.close()
    print(f"seed {seed}: {fuzzer.stats.line()}", file=out)
    return fuzzer.stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--seed", type=int, help="one seed (default: a new one per database)")
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="a server where the fuzzer may create databases")
    args = parser.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    total, seed = Stats(), args.seed if args.seed is not None else random.randrange(1 << 30)
    while time.monotonic() < deadline:
        name = f"argus_fuzz_{seed}"
        roles.drop_database(args.dsn, name)
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        dsn = psycopg.conninfo.make_conninfo(args.dsn, dbname=name)
        stats = run(dsn, seed, seconds=min(300, max(1, deadline - time.monotonic())))
        for key in ("queries", "isolated", "cycles", "comparisons", "drops", "quarantined",
                    "migrated"):
            setattr(total, key, getattr(total, key) + getattr(stats, key))
        total.refused.update(stats.refused)
        roles.drop_database(args.dsn, name)
        if args.seed is not None:
            break
        seed = random.randrange(1 << 30)
    print(f"total: {total.line()}")
    for reason, count in total.refused.most_common():
        print(f"  refused {count}: {reason}")


if __name__ == "__main__":
    main()
