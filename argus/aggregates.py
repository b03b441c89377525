"""Incremental aggregation: each aggregate as bookkeeping columns and a final value.

An aggregate node stores, per group, its count of input rows (argus_n), for each
aggregate the bookkeeping that lets it be updated from a delta without re-reading the
group (sums, non-NULL counts, sums of squares, extremes), and the final values computed
from them. `AGGREGATES` is the data: how each function's bookkeeping changes with a
signed delta row ({x} the argument, {s} the row's sign), how old and delta bookkeeping
combine, and the final value as SQL over the bookkeeping columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sqlglot
from sqlglot import exp

from .trees import DIALECT, qualified, tree_of

# (suffix, change per input row, combine). "add": old + delta; "min"/"max": the extreme
# of old and the inserted rows (re-read when rows were retracted); "distinct": from the
# per-value counts of the node's aux table.
_COUNT = ("c", "coalesce(sum(CASE WHEN ({x}) IS NOT NULL THEN {s} ELSE 0 END), 0)", "add")

# An argument's category (argus.network.builder._category) says how its sums are kept: exactly,
# in a type wide enough that a retraction never overflows (an int sum in bigint, an int8
# one in numeric), floats as the decimals PostgreSQL prints for them (so that 1e9 + 0.1
# and 1e9 + 0.2 do not cancel), and NaN and ±Infinity counted apart from the sums of the
# finite values, so that such a row can leave again.
_VALUE = {
    "int": "({x})::bigint",
    "int8": "({x})::numeric",
    "numeric": "CASE WHEN abs({x}) < 'Infinity' THEN {x} END",
    "float4": "CASE WHEN abs({x}) < 'Infinity' THEN ({x})::text::numeric END",
    "float8": "CASE WHEN abs({x}) < 'Infinity' THEN ({x})::text::numeric END",
    "other": "({x})",
}
SPECIAL = {"numeric", "float4", "float8"}  # categories with NaN and ±Infinity
# A numeric sum's scale is the largest of its current rows' (PostgreSQL's accumulator),
# and an average's or a variance's rounding follows it: the largest scale is kept as an
# extreme (re-read when rows leave), since a running sum keeps the scale of rows gone.
_SCALE = ("d", "max(CASE WHEN {s} > 0 THEN scale({x}) END)", "max")
_SPECIALS = [(suffix, f"coalesce(sum({{s}}) FILTER (WHERE ({{x}}) = '{value}'), 0)", "add")
             for suffix, value in (("nan", "NaN"), ("pinf", "Infinity"), ("ninf", "-Infinity"))]
COUNTS = ("c", "f", "t", "nan", "pinf", "ninf")  # books that count rows
_FLOAT = {"float4": "real", "float8": "double precision"}


def _base(category: str | None) -> str | None:
    """The family of "numeric:<scale>", a numeric column declared with a scale
    (numeric(12,2)): every value has that scale, so does every sum, and no largest
    scale is kept."""
    return category.split(":")[0] if category else category


def fixed_scale(arg: str, scales: dict[str, int]) -> int | None:
    """The scale every value of the numeric expression `arg` has, when its columns'
    (`scales`: t1's numeric columns declared with a scale, and its integers at 0) and
    PostgreSQL's arithmetic fix it: + and - keep the larger scale, * adds them
    (numeric_add, numeric_mul). None when it may vary from row to row (a division, a
    function, CASE): its sums keep the largest scale of their rows."""
    def scale(node: exp.Expression) -> int | None:
        if isinstance(node, exp.Paren | exp.Neg):
            return scale(node.this)
        if isinstance(node, exp.Column):
            return scales.get(node.name) if node.table == "t1" else None
        if isinstance(node, exp.Literal) and node.is_number:
            whole, _, decimals = node.name.partition(".")
            return len(decimals) if (whole + decimals).isdigit() else None
        if isinstance(node, exp.Add | exp.Sub | exp.Mul):
            left, right = scale(node.this), scale(node.expression)
            if left is None or right is None:
                return None
            return left + right if isinstance(node, exp.Mul) else max(left, right)
        return None

    try:
        return scale(tree_of(arg))
    except sqlglot.errors.ParseError:
        return None


def _sums(category: str, squares: bool) -> list[tuple[str, str, str]]:
    value = _VALUE.get(_base(category), _VALUE["other"])
    books = [("s", f"sum({{s}} * {value})", "add")]
    if squares:
        books.append(("q", f"sum({{s}} * {value} * {value})", "add"))
    specials = _SPECIALS if _base(category) in SPECIAL else []
    if category != _base(category):  # a fixed scale: NaN, but never ±Infinity (a
        # numeric(p,s) cannot hold one, and + - * of finite values stay finite), so
        # those books stay 0 without comparing every row with both (a third of TPC-H
        # Q1's aggregate)
        specials = [(suffix, "0::bigint" if suffix.endswith("inf") else change, combine)
                    for suffix, change, combine in specials]
    return books + [_COUNT] + specials + ([_SCALE] if category == "numeric" else [])


def _special(value: str, category: str, sums: bool = True) -> str:
    """`value` over the finite rows, or what PostgreSQL answers when NaN or ±Infinity
    are among the rows: for sums and averages NaN, or the one infinity present; for
    variances NaN."""
    if _base(category) == "numeric":  # at the scale of the current rows (or the declared one)
        scale = "{d}" if category == "numeric" else category.split(":")[1]
        value = (value.replace("{s}", f"round({{s}}, {scale})")
                 .replace("{q}", f"round({{q}}, 2 * {scale})"))
    if _base(category) not in SPECIAL:
        return value
    if not sums:
        return f"CASE WHEN {{nan}} + {{pinf}} + {{ninf}} > 0 THEN 'NaN' ELSE {value} END"
    return (f"CASE WHEN {{nan}} > 0 OR ({{pinf}} > 0 AND {{ninf}} > 0) THEN 'NaN' "
            f"WHEN {{pinf}} > 0 THEN 'Infinity' WHEN {{ninf}} > 0 THEN '-Infinity' "
            f"ELSE {value} END")


def _variance(sample: bool, category: str, root: bool) -> str:
    """As PostgreSQL computes var_* and stddev_*: over numeric sums for exact inputs
    (numeric_stddev_internal, which clamps a non-positive numerator to 0 and rounds the
    root at the variance's scale: argus.numeric_sqrt), as the float of the exact
    variance for floats."""
    minimum = "1" if sample else "0"
    numerator = "({c} * {q} - {s} * {s})"
    denominator = "({c} * ({c} - 1))" if sample else "({c} * {c})"
    variance = f"{numerator} / {denominator}"
    if category in _FLOAT:
        variance = f"({variance})::double precision"
        value = f"sqrt({variance})" if root else variance
        return (f"CASE WHEN {{c}} > {minimum} THEN "
                f"CAST({_special(value, category, sums=False)} AS double precision) END")
    value = f"argus.numeric_sqrt({variance})" if root else variance
    exact = f"CASE WHEN {numerator} <= 0 THEN 0 ELSE {value} END"
    return f"CASE WHEN {{c}} > {minimum} THEN {_special(exact, category, sums=False)} END"


def _spec(func: str, category: str, distinct: bool):
    """(bookkeeping, final) of one aggregate; category: the argument's type family."""
    if func == "count" and distinct:
        return [("c", "count(DISTINCT {x})", "distinct")], "{c}"
    sums = _sums(category, squares=func.startswith(("var", "stddev")))
    total = _special("{s}", category)
    if category == "int":
        total = "CAST({s} AS bigint)"  # sum(int) is a bigint
    elif category in _FLOAT:
        total = f"CAST({total} AS {_FLOAT[category]})"
    mean = _special("{s} / {c}", category)
    if category in _FLOAT:
        mean = f"CAST({mean} AS double precision)"
    table = {
        "count": ([_COUNT], "{c}"),
        "sum": (sums, f"CASE WHEN {{c}} > 0 THEN {total} END"),
        "avg": (sums, f"CASE WHEN {{c}} > 0 THEN {mean} END"),
        "min": ([("m", "min(CASE WHEN {s} > 0 THEN {x} END)", "min")], "{m}"),
        "max": ([("m", "max(CASE WHEN {s} > 0 THEN {x} END)", "max")], "{m}"),
        "var_samp": (sums, _variance(True, category, False)),
        "var_pop": (sums, _variance(False, category, False)),
        "stddev_samp": (sums, _variance(True, category, True)),
        "stddev_pop": (sums, _variance(False, category, True)),
        "bool_and": ([_COUNT, ("f", "coalesce(sum(CASE WHEN ({x}) = false THEN {s} ELSE 0 END), 0)",
                               "add")], "CASE WHEN {c} > 0 THEN {f} = 0 END"),
        "bool_or": ([_COUNT, ("t", "coalesce(sum(CASE WHEN ({x}) = true THEN {s} ELSE 0 END), 0)",
                              "add")], "CASE WHEN {c} > 0 THEN {t} > 0 END"),
    }
    return table[func]


def _merged(func: str, category: str, sources: dict[str, list[str]]):
    """(bookkeeping, final) of an aggregate computed from a finer aggregate node's rows
    (ARGUS's vertical expansion): each book adds up (or takes the extreme of) the
    parent's book of the same kind, cast to the type the direct book would have, so
    the final value is the same expression over the same values."""
    books, final = _spec(func, category, False)  # count(*): one count book, "c"
    merged = []
    for suffix, _, combine in books:
        column, pg_type = sources[suffix]
        x = qualified("t1", column)
        if combine in ("min", "max"):
            change = f"{combine}(CASE WHEN {{s}} > 0 THEN {x} END)"
        elif suffix in COUNTS:
            change = f"CAST(coalesce(sum({{s}} * {x}), 0) AS {pg_type})"
        else:
            change = f"CAST(sum({{s}} * {x}) AS {pg_type})"
        merged.append((suffix, change, combine))
    return merged, final


def books_needed(func: str, category: str | None) -> list[tuple[str, str, str]]:
    """(suffix, change, combine) of the books an aggregate is computed from (count(*):
    one count book, the rows' count)."""
    return _spec(func, category, False)[0]


@dataclass(frozen=True)
class Book:
    column: str
    change: str  # SQL over {x} and {s}
    # add | min | max | distinct | count: how many rows hold the min or max book before
    # it (a "counted" node's, NULL when unknown), so that losing a row at the extreme
    # re-reads the group only when it was the last one there
    combine: str
    value: str | None = None  # min/max: what the extreme is of, over a parent row (t1)

    def over(self, arg: str, sign: str) -> str:
        return self.change.format(x=arg, s=sign)

    @property
    def suffix(self) -> str:
        """What the book keeps: "s" a sum, "m" a MIN/MAX, "d" a largest scale, …"""
        return self.column.rsplit("_", 1)[1]


@dataclass(frozen=True)
class Spec:
    index: int  # position in the node's aggregates (names its aux table)
    name: str
    func: str
    arg: str | None  # None: count(*)
    distinct: bool
    books: tuple[Book, ...]
    final: str  # SQL over {n} and the books' suffixes

    def final_over(self, alias: str) -> str:
        refs = {"n": qualified(alias, "argus_n")}
        refs.update({b.suffix: qualified(alias, b.column) for b in self.books})
        return self.final.format(**refs)


@dataclass(frozen=True)
class Entry:
    """One aggregate of an aggregate node's definition (stored as a JSON list):
    output column, function, argument over t1 (None for count(*)), DISTINCT, the
    argument's category (argus.network.builder._category), and for a node regrouped from a
    finer aggregate (vertical expansion) where its books come from."""

    name: str
    func: str
    arg: str | None
    distinct: bool
    category: str | None
    merge: dict | None = None  # {"from": {suffix: [column, ...]}, "arg": ...}

    @classmethod
    def of(cls, stored: list) -> Entry:
        return cls(*stored[:5], stored[5] if len(stored) > 5 else None)

    @property
    def regrouped(self) -> bool:
        return self.merge is not None


def entries(definition: dict) -> list[Entry]:
    return [Entry.of(e) for e in definition["aggregates"]]


def _extreme_of(suffix: str, arg: str | None, merge: dict | None) -> str | None:
    """What a min/max book takes the extreme of, over a row of the node's parent: the
    argument (or its scale), or for a regrouped node the finer node's book."""
    if merge is not None:
        return qualified("t1", merge["from"][suffix][0])
    return f"scale({arg})" if suffix == "d" else arg


@dataclass(frozen=True)
class Family:
    index: int  # its first member's: names its aux table (d<index>)
    value: str  # SQL over t1
    members: tuple[tuple[Spec, str | None], ...]  # (COUNT(DISTINCT), its condition)

    def count_column(self, spec: Spec) -> str:
        return f"argus_n{spec.index}"


def _filtered(arg: str) -> tuple[str, str | None]:
    """`CASE WHEN c THEN x END` as (x, c); any other argument as (it, None)."""
    tree = tree_of(arg)
    ifs = tree.args.get("ifs") if isinstance(tree, exp.Case) else None
    if ifs and len(ifs) == 1 and tree.args.get("default") is None and not tree.this:
        return ifs[0].args["true"].sql(DIALECT), ifs[0].this.sql(DIALECT)
    return arg, None


@dataclass(frozen=True)
class Model:
    groups: tuple[tuple[str, str], ...]  # (column, SQL over t1)
    specs: tuple[Spec, ...]

    @classmethod
    def of(cls, definition: dict) -> Model:
        counted = bool(definition.get("counted"))
        specs = []
        for i, entry in enumerate(entries(definition)):
            name, func, arg, distinct, category, merge = (
                entry.name, entry.func, entry.arg, entry.distinct, entry.category, entry.merge)
            if merge is not None:
                books, final = _merged(func, category, merge["from"])
                arg = merge["from"].get("m", [None])[0]
                arg = qualified("t1", arg) if arg else None
            elif arg is None:
                books, final = [], "{n}"
            else:
                books, final = _spec(func, category, distinct)
            kept = []
            for suffix, change, combine in books:
                extreme = combine in ("min", "max")
                kept.append(Book(f"argus_{name}_{suffix}", change, combine,
                                 _extreme_of(suffix, arg, merge) if extreme else None))
                if extreme and counted:
                    kept.append(Book(f"argus_{name}_{suffix}count", "NULL::bigint", "count"))
            specs.append(Spec(i, name, func, arg, distinct, tuple(kept), final))
        return cls(tuple((g, e) for g, e in definition["groups"]), tuple(specs))

    @property
    def group_names(self) -> list[str]:
        return [g for g, _ in self.groups]

    @property
    def group_exprs(self) -> list[str]:
        return [e for _, e in self.groups]

    @property
    def is_global(self) -> bool:
        return not self.groups

    @property
    def books(self) -> list[tuple[Spec, Book]]:
        return [(s, b) for s in self.specs for b in s.books]

    @property
    def stored(self) -> list[str]:
        """The history's columns (argus_hash aside), in order."""
        return (self.group_names + [s.name for s in self.specs] + ["argus_n"]
                + [b.column for _, b in self.books])

    @property
    def distinct_specs(self) -> list[Spec]:
        return [s for s in self.specs if s.distinct]

    @cached_property
    def families(self) -> list[Family]:
        """The COUNT(DISTINCT …) of one value, each perhaps under a FILTER (folded into
        `CASE WHEN c THEN x END`): one aux table counts, per (group, x), the rows each
        member's condition passes (Nexmark q15 counts the distinct bidders of a day four
        ways: one table, not four)."""
        found: dict[str, list[tuple[Spec, str | None]]] = {}
        for spec in self.distinct_specs:
            value, condition = _filtered(spec.arg)
            found.setdefault(value, []).append((spec, condition))
        return [Family(members[0][0].index, value, tuple(members))
                for value, members in found.items()]

    def family_of(self, spec: Spec) -> Family:
        return next(f for f in self.families if any(m is spec for m, _ in f.members))

    @property
    def counted(self) -> bool:
        return bool(self.counted_extremes)

    @property
    def counted_extremes(self) -> list[tuple[Spec, Book, Book]]:
        """(spec, MIN/MAX book, the book counting the rows at its extreme)."""
        return [(spec, book, after) for spec in self.specs
                for book, after in zip(spec.books, spec.books[1:]) if after.combine == "count"]

    @property
    def has_extremes(self) -> bool:
        return any(b.combine in ("min", "max") for _, b in self.books)

    @property
    def keeps_scale(self) -> bool:
        """Whether a numeric sum, average or variance keeps its rows' largest scale
        (an extreme of their scales, which can fall as an input's printed value does)."""
        return any(b.suffix == _SCALE[0] for _, b in self.books)
