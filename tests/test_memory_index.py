"""The computation index in memory (argus.mqo.memory_index) finds the candidates the
catalog's SQL search finds (argus.mqo.index.candidates), in the same order, on the
networks of tests/fixtures/sharing.txt built on a server: every set of sources indexed,
under every query shape the network's literals have, each alone and random sets of
them, for a new query and for each query its own nodes are private to."""

from __future__ import annotations

import random

import pytest

import argus
from argus.mqo import index
from argus.mqo.memory_index import MemoryIndex

from .fixtures import cases
from .test_sharing import RESERVED, setup


INDEXING = [c for c in cases("sharing.txt")  # (the cases of aggregates alone index nothing)
            if any(k.startswith("nodes") and ("select@" in v or "join@" in v)
                   for k, v in c.items())]


@pytest.mark.parametrize("case", INDEXING, ids=lambda c: c["title"])
def test_memory_index_finds_what_the_catalog_finds(case, fresh_dsn):
    with argus.connect(fresh_dsn, sharing=case.get("sharing", "selection")) as db:
        db.configure(layout=case.get("layout", "cost"))
        oracle = setup(db)
        for name, text in case.items():
            if name not in RESERVED and not name.startswith("nodes"):
                oracle.register(name, text)
        conn = db.conn
        memory = MemoryIndex(index.entries(conn))
        shapes = sorted({literal.shape for e in memory.entries.values()
                         for clause in e.indexed.predset for literal in clause})
        rng = random.Random(case["title"])
        tried = [[], shapes, *([s] for s in shapes),
                 *(rng.sample(shapes, rng.randint(1, len(shapes))) for _ in range(5) if shapes)]
        indexed = {e.indexed.sources for e in memory.entries.values()}
        assert indexed
        queries = {"", *(e.private_to for e in memory.entries.values() if e.private_to)}
        for sources in indexed:
            for some in tried:
                for query in queries:
                    assert memory.candidates(sources, some, query=query) == index.candidates(
                        conn, sources, some, query=query), (sources, some, query)
