"""The logical plan of one query: what the network must compute for it.

Plans are immutable trees of small records. Every plan names its output columns; SQL
inside a plan node refers to its inputs by the standard aliases t1 (first input) and
t2 (second). `argus.network` maps each plan node to a node of the shared network,
reusing an equal one, and the query's `Output` to its views.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Col:
    """An output column: its name in the node and the SQL that computes it."""

    name: str
    expr: str


@dataclass(frozen=True)
class Scan:
    """All rows of a stream: the stream's own source node."""

    stream: str
    columns: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return self.columns


@dataclass(frozen=True)
class Select:
    """Rows of the input satisfying `predicate` (None: all), projected to `columns`:
    ARGUS's selection node with minimum column projection."""

    input: Plan
    predicate: str | None
    columns: tuple[Col, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Join:
    """A 2-way join. join_type: 'inner'; 'left' (NULL-padded right side); 'semi' and 'anti'
    (left rows with / without a partner, left columns only)."""

    left: Plan
    right: Plan
    join_type: str
    condition: str
    columns: tuple[Col, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Agg:
    """One aggregate of an Aggregate node: func is a lower-case PostgreSQL name
    ('count', 'sum', …); arg is SQL over t1, None for count(*)."""

    name: str
    func: str
    arg: str | None
    distinct: bool = False

    @property
    def call(self) -> str:
        """The aggregate as SQL over t1 (a holistic one's `arg` is its whole call)."""
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{self.arg or '*'})"


@dataclass(frozen=True)
class Aggregate:
    """GROUP BY `groups` (none: one global group) computing `aggregates`."""

    input: Plan
    groups: tuple[Col, ...]
    aggregates: tuple[Agg, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.groups) + tuple(a.name for a in self.aggregates)


@dataclass(frozen=True)
class Distinct:
    input: Plan

    @property
    def names(self) -> tuple[str, ...]:
        return self.input.names


@dataclass(frozen=True)
class SetOp:
    """UNION ALL ('union_all'), INTERSECT, INTERSECT ALL, EXCEPT, EXCEPT ALL of two
    inputs with the same number of columns (matched by position). UNION is
    Distinct(SetOp('union_all', …))."""

    op: str
    left: Plan
    right: Plan

    @property
    def names(self) -> tuple[str, ...]:
        return self.left.names


@dataclass(frozen=True)
class Window:
    """Window functions over the input: `columns` (SQL over t1, OVER clauses included)
    computed per row; `keys` the partition keys every window shares, so that the rows
    of one partition are computed again when the input's rows of it change."""

    input: Plan
    keys: tuple[Col, ...]
    columns: tuple[Col, ...]
    keep: tuple[str, int] | None = None  # (a ranking column, k): only rows ranked ≤ k

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.keys + self.columns)


@dataclass(frozen=True)
class Recursive:
    """WITH RECURSIVE over UNION: `input` (the non-recursive branches) and one linear
    recursive branch, `step`: its SQL with the relation itself as `{r}`, each stream it
    reads as `{o<i>}` (`streams[i]`'s rows) and `{prune}` ANDed to its WHERE (that the
    row it makes, `values`, is not held yet).
    `columns` are the relation's own column names, as the step reads them; `keys` the
    columns its equalities probe, (a stream, or None for the relation; a column)."""

    input: Plan
    step: str
    values: tuple[str, ...]
    streams: tuple[str, ...]
    columns: tuple[str, ...]
    keys: tuple[tuple[str | None, str], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.columns


Plan = Scan | Select | Join | Aggregate | Distinct | SetOp | Window | Recursive


@dataclass(frozen=True)
class Output:
    """The query's output expressions (SQL over its top node, alias t1, each with its
    output name). They are computed by the query's views, not stored, so that nodes
    stay shareable between queries."""

    input: Plan
    exprs: tuple[str, ...]
