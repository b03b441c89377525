"""Sharing planned without a server (issue 55): the selection-join cases of
tests/fixtures/sharing.txt, their queries read by the frontend and their blocks covered
by the multi-query optimizer (mqo.sharing.BlockBuilder) over a network in memory
(argus.network.memory), give the nodes the same cases give on a server
(tests/test_sharing.py). Their rows are a model's, not PostgreSQL's estimates."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from argus.frontend.analyze import StreamSchema, analyze
from argus.mqo.blocks import describe, is_spj
from argus.mqo.sharing import BlockBuilder, Sharing
from argus.network.memory import MemoryNetwork
from argus.plan import Scan, Select

from .fixtures import cases
from .test_sharing import RESERVED, transfer_rows

COLUMNS = {"tran_id": "bigint", "tran_date": "date", "sender": "text", "receiver": "text",
           "amount": "numeric(14,2)"}
SCHEMAS = {"transfers": StreamSchema("transfers", tuple(COLUMNS.items()), "tran_date")}


def queries(case: dict) -> dict[str, str]:
    return {k: v for k, v in case.items() if k not in RESERVED and not k.startswith("nodes")}


def spj(plan) -> bool:
    """Selections and inner joins down to the stream's scans."""
    if isinstance(plan, Scan):
        return True
    return is_spj(plan) and all(spj(p) for p in (
        [plan.input] if isinstance(plan, Select) else [plan.left, plan.right]))


SPJ = [c for c in cases("sharing.txt")
       if all(spj(analyze(q, SCHEMAS).plan.input) for q in queries(c).values())]


SAMPLE = [dict(zip(COLUMNS, (i, dt.date.fromisoformat(day), s, r, amount)))
          for i, day, s, r, amount in transfer_rows(random.Random(7), 0, 300)]  # (setup's)


def planned(case: dict) -> dict[str, str]:
    """Each query's nodes besides the stream, as kind@query-that-made-it."""
    net = MemoryNetwork(Sharing.of(case.get("sharing")), case.get("layout", "cost"),
                        samples={"transfers": SAMPLE})
    stream = net.add_stream("transfers", COLUMNS, rows=300)
    sharing = net.sharing
    out = {}
    for name, text in queries(case).items():
        net.query = name
        plan = analyze(text, SCHEMAS).plan.input

        def source(p):  # (a scan of the one stream)
            return stream.id, {c: c for c in p.names}, COLUMNS, frozenset({"tran_date"})

        block = describe(plan, source, canonical=sharing.canonicalize,
                         infer=sharing.infer_bounds)
        node, _ = BlockBuilder(net, block).build()
        out[name] = " ".join(f"{kind}@{net.created_by[n]}"
                             for n, kind in net.ancestors(node.id) if n != stream.id)
    return out


@pytest.mark.parametrize("case", SPJ, ids=lambda c: c["title"])
def test_sharing_planned_without_a_server(case):
    expected = {k.split()[1]: v for k, v in case.items() if k.startswith("nodes ")}
    assert planned(case) == expected
