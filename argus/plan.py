"""The logical plan of one query: what the network must compute for it.

Plans are immutable trees of small records; `argus.network` maps each to a node of the
shared network (reusing an equal one) and the query's `Output` to its views.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scan:
    """All rows of a stream: the stream's own source node."""

    stream: str


@dataclass(frozen=True)
class Select:
    """Rows of the input that satisfy `predicate`, keeping `columns` (ARGUS's selection
    node with minimum column projection). SQL refers to the input as t1."""

    input: Plan
    predicate: str
    columns: tuple[str, ...]


Plan = Scan | Select


@dataclass(frozen=True)
class Output:
    """The query's output expressions over its top node (alias t1). They are computed by
    the query's views, not stored, so that nodes stay shareable between queries."""

    input: Plan
    exprs: tuple[str, ...]
