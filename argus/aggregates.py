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

# (suffix, change per input row, combine). "add": old + delta; "min"/"max": the extreme
# of old and the inserted rows (re-read when rows were retracted); "distinct": from the
# per-value counts of the node's aux table.
_COUNT = ("c", "coalesce(sum(CASE WHEN ({x}) IS NOT NULL THEN {s} ELSE 0 END), 0)", "add")


def _sums(cast: str) -> list[tuple[str, str, str]]:
    return [("s", f"sum({{s}} * ({{x}}){cast})", "add"),
            ("q", f"sum({{s}} * ({{x}}){cast} * ({{x}}){cast})", "add"), _COUNT]


def _variance(sample: bool, exact: bool, root: bool) -> str:
    """As PostgreSQL computes var_* and stddev_* (numeric_stddev_internal for exact
    inputs, which clamps a non-positive numerator to 0)."""
    minimum = "1" if sample else "0"
    numerator = "({c} * {q} - {s} * {s})"
    denominator = "({c} * ({c} - 1))" if sample else "({c} * {c})"
    if exact:
        variance = f"{numerator} / {denominator}"
        value = f"round(sqrt({variance}), scale({variance}))" if root else variance
        return (f"CASE WHEN {{c}} > {minimum} THEN "
                f"CASE WHEN {numerator} <= 0 THEN 0 ELSE {value} END END")
    variance = f"greatest({numerator}, 0) / {denominator}"
    return f"CASE WHEN {{c}} > {minimum} THEN {f'sqrt({variance})' if root else variance} END"


def _spec(func: str, category: str, distinct: bool):
    """(bookkeeping, final) of one aggregate; category: the argument's type family."""
    cast = {"exact": "::numeric", "float": "::float8"}.get(category, "")
    exact = category == "exact"
    if func == "count" and distinct:
        return [("c", "count(DISTINCT {x})", "distinct")], "{c}"
    table = {
        "count": ([_COUNT], "{c}"),
        "sum": ([("s", "sum({s} * ({x}))", "add"), _COUNT], "CASE WHEN {c} > 0 THEN {s} END"),
        "avg": ([("s", f"sum({{s}} * ({{x}}){cast})", "add"), _COUNT],
                "CASE WHEN {c} > 0 THEN {s} / {c} END"),
        "min": ([("m", "min(CASE WHEN {s} > 0 THEN {x} END)", "min")], "{m}"),
        "max": ([("m", "max(CASE WHEN {s} > 0 THEN {x} END)", "max")], "{m}"),
        "var_samp": (_sums(cast), _variance(True, exact, False)),
        "var_pop": (_sums(cast), _variance(False, exact, False)),
        "stddev_samp": (_sums(cast), _variance(True, exact, True)),
        "stddev_pop": (_sums(cast), _variance(False, exact, True)),
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
        x = f'"t1"."{column}"'
        if combine in ("min", "max"):
            change = f"{combine}(CASE WHEN {{s}} > 0 THEN {x} END)"
        elif suffix in ("c", "f", "t"):
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
    combine: str  # add | min | max | distinct

    def over(self, arg: str, sign: str) -> str:
        return self.change.format(x=arg, s=sign)


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
        refs = {"n": f'"{alias}"."argus_n"'}
        refs.update({b.column.rsplit("_", 1)[1]: f'"{alias}"."{b.column}"' for b in self.books})
        return self.final.format(**refs)


@dataclass(frozen=True)
class Model:
    groups: tuple[tuple[str, str], ...]  # (column, SQL over t1)
    specs: tuple[Spec, ...]

    @classmethod
    def of(cls, definition: dict) -> Model:
        specs = []
        for i, entry in enumerate(definition["aggregates"]):
            name, func, arg, distinct, category = entry[:5]
            merge = entry[5] if len(entry) > 5 else None
            if merge is not None:
                books, final = _merged(func, category, merge["from"])
                arg = merge["from"].get("m", [None])[0]
                arg = f'"t1"."{arg}"' if arg else None
            elif arg is None:
                books, final = [], "{n}"
            else:
                books, final = _spec(func, category, distinct)
            specs.append(Spec(i, name, func, arg, distinct,
                              tuple(Book(f"argus_{name}_{suffix}", change, combine)
                                    for suffix, change, combine in books), final))
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

    @property
    def has_extremes(self) -> bool:
        return any(s.func in ("min", "max") for s in self.specs)
