"""Sharing planned without a server (issue 55): the cases of tests/fixtures/sharing.txt,
their queries read by the frontend and mapped to nodes (network.mapping, the
multi-query optimizer's blocks and regrouping) over a network in memory
(network.memory), give the nodes the same cases give on a server (tests/test_sharing.py).
Their rows are a model's (the server's rows as a sample), not PostgreSQL's estimates."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from argus.frontend.analyze import StreamSchema, analyze
from argus.mqo.sharing import Sharing
from argus.network.memory import MemoryNetwork

from .fixtures import cases
from .test_sharing import RESERVED, transfer_rows

COLUMNS = {"tran_id": "bigint", "tran_date": "date", "sender": "text", "receiver": "text",
           "amount": "numeric(14,2)"}
SCHEMAS = {"transfers": StreamSchema("transfers", tuple(COLUMNS.items()), "tran_date")}


def queries(case: dict) -> dict[str, str]:
    return {k: v for k, v in case.items() if k not in RESERVED and not k.startswith("nodes")}


SAMPLE = [dict(zip(COLUMNS, (i, dt.date.fromisoformat(day), s, r, amount)))
          for i, day, s, r, amount in transfer_rows(random.Random(7), 0, 300)]  # (setup's)


def planned(case: dict) -> dict[str, str]:
    """Each query's nodes besides the stream, as kind@query-that-made-it."""
    net = MemoryNetwork(Sharing.of(case.get("sharing")), case.get("layout", "cost"),
                        samples={"transfers": SAMPLE})
    stream = net.add_stream("transfers", COLUMNS, rows=len(SAMPLE), time_column="tran_date")
    tops = {name: net.plan(name, analyze(text, SCHEMAS).plan.input)
            for name, text in queries(case).items()}
    return {name: " ".join(f"{kind}@{net.created_by[n]}"
                           for n, kind in net.ancestors(top.id) if n != stream.id)
            for name, top in tops.items()}  # (once all are planned: a node may move)


@pytest.mark.parametrize("case", cases("sharing.txt"), ids=lambda c: c["title"])
def test_sharing_planned_without_a_server(case):
    expected = {k.split()[1]: v for k, v in case.items() if k.startswith("nodes ")}
    assert planned(case) == expected
