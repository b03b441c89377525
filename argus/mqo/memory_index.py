"""The computation index in memory: what argus.mqo.index keeps in the catalog and
searches with SQL, held in a dict and searched in Python, for a network planned without
a server (issue 55's read-only network view). Its candidates are index.candidates'
(tests/test_memory_index.py compares the two over networks built on a server)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..frontend.canon import PredSet
from .blocks import Indexed


def sources_key(sources: Iterable[int]) -> str:
    """The sources a node joins, as a set: the key its candidates are found by."""
    return ",".join(str(s) for s in sorted(sources))


def could_imply(predset: PredSet, shapes: frozenset[str]) -> bool:
    """A node whose PredSet a query's conditions could imply: each of its OR-predicates
    has a literal of a shape the query's literals have (the catalog's literal layer;
    blocks.matches decides)."""
    return all(any(literal.shape in shapes for literal in clause) for clause in predset)


@dataclass(frozen=True)
class Entry:
    indexed: Indexed
    lazy: bool = False  # a join a JISC migration is completing (network.jisc)
    excluded: bool = False  # isolated since a failure: stale
    private_to: str | None = None  # the one query that may read it (None: any)


class MemoryIndex:
    """Indexed nodes by id."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.entries = {e.indexed.node_id: e for e in entries}

    def record(self, entry: Entry) -> None:
        self.entries[entry.indexed.node_id] = entry

    def candidates(self, sources: Iterable[int], shapes: Iterable[str],
                   visible: Iterable[int] = (), query: str = "") -> list[Indexed]:
        """Indexed nodes joining exactly these sources whose PredSets the query could
        imply, by id; no isolated node, no lazily built join but those `visible`, and no
        node private to a query other than `query`."""
        key, shapes, visible = sources_key(sources), frozenset(shapes), frozenset(visible)
        return [e.indexed for _, e in sorted(self.entries.items())
                if sources_key(e.indexed.sources) == key and not e.excluded
                and (not e.lazy or e.indexed.node_id in visible)
                and e.private_to in (None, query)
                and could_imply(e.indexed.predset, shapes)]
