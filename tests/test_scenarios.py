"""Golden scenarios: scripts of streams, queries, batches and the rows each query must
hold after each cycle (tests/scenarios/*.txt). Every step is also checked by the
oracle, so a scenario checks both that argus equals PostgreSQL and that PostgreSQL
gives the answer the scenario's author worked out by hand.

Script lines:
    == title                         starts a scenario
    stream NAME (COL TYPE, ...)      create a stream [… ) time COL: with an event time]
    table NAME (COL TYPE, ...) key K  create a table with primary key K (K1,K2: several)
    query NAME: SQL                  register a query (SQL may continue on indented lines)
    drop NAME                        unregister a query
    insert STREAM: [ROWS]            Python literals; NULL, date(…) and Decimal(…) allowed
    update TABLE: [ROWS]             replace the rows with these rows' keys
    delete TABLE: [KEYS]             delete by key (tuples for a key of several columns)
    cycle                            run a cycle, then check every query with the oracle
    expect NAME: [ROWS]              the query's answer, as a bag
    changes NAME: [ROWS]             the last cycle's changes, sign last
    rows STREAM: N                   how many rows the stream's history keeps
    refused NAME: FRAGMENT | SQL     registering SQL fails with FRAGMENT in the message
    failed NAME, …: FRAGMENT         the queries the last cycle isolated, with FRAGMENT in
                                     each one's error
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import re

import pytest
from psycopg import sql

from argus import ArgusError
from argus.names import stream_history

from .oracle import Oracle, bag

SCENARIOS = Path(__file__).parent / "scenarios"
NAMES = {"NULL": None, "date": dt.date, "datetime": dt.datetime, "Decimal": Decimal,
         "__builtins__": {}}


def parse(path: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    scenarios: list = []
    for raw in path.read_text().splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw.startswith("=="):
            scenarios.append((raw[2:].strip(), []))
        elif raw[0].isspace():
            verb, text = scenarios[-1][1][-1]
            scenarios[-1][1][-1] = (verb, f"{text}\n{raw.strip()}")
        else:
            verb, _, text = raw.partition(" ")
            scenarios[-1][1].append((verb, text))
    return scenarios


def stream_spec(text: str) -> tuple[str, dict[str, str], str | None]:
    """`NAME (COL TYPE, ...) [time COL]` -> (name, columns, time column)."""
    text, timed, time_column = text.partition(") time ")
    name, _, spec = text.partition("(")
    spec = spec if timed else spec.rstrip().removesuffix(")")
    columns = dict(c.strip().split(" ", 1) for c in re.split(r",(?![^()]*\))", spec))
    return name.strip(), columns, time_column.strip() or None


CASES = [(f"{path.stem}: {title}", steps) for path in sorted(SCENARIOS.glob("*.txt"))
         for title, steps in parse(path)]


def rows(text: str) -> list[tuple]:
    value = eval(text, NAMES)  # noqa: S307 - our own fixture files
    return [tuple(r) if isinstance(r, (tuple, list)) else (r,) for r in value]


@pytest.mark.parametrize("steps", [s for _, s in CASES], ids=[t for t, _ in CASES])
def test_scenario(db, steps):
    oracle = Oracle(db)
    for verb, text in steps:
        if verb == "stream":
            name, columns, time_column = stream_spec(text)
            oracle.create_stream(name, columns, time_column=time_column)
        elif verb == "table":
            spec, _, key = text.rpartition(" key ")
            name, columns, _ = stream_spec(spec)
            oracle.create_table(name, columns, [k.strip() for k in key.split(",")])
        elif verb == "query":
            name, _, sql_text = text.partition(":")
            oracle.register(name.strip(), sql_text.strip())
        elif verb == "drop":
            oracle.unregister(text.strip())
        elif verb == "insert":
            stream, _, literal = text.partition(":")
            oracle.insert(stream.strip(), rows(literal))
        elif verb in ("update", "delete"):
            table, _, literal = text.partition(":")
            keys = eval(literal, NAMES)  # noqa: S307 - our own fixture files
            getattr(oracle, verb)(table.strip(), rows(literal) if verb == "update" else keys)
        elif verb == "cycle":
            oracle.run()
        elif verb == "expect":
            name, _, literal = text.partition(":")
            assert bag(db.results(name.strip())) == bag(rows(literal)), f"answer of {name}"
        elif verb == "rows":  # rows kept in a stream's history (bounded state)
            stream, _, count = text.partition(":")
            kept = db.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
                stream_history(stream.strip()))).fetchone()[0]
            assert kept == int(count), f"{stream} keeps {kept} rows, expected {count}"
        elif verb == "refused":  # a query whose registration must fail
            name, _, rest = text.partition(":")
            fragment, _, sql_text = rest.partition("|")
            with pytest.raises(ArgusError, match=re.escape(fragment.strip())):
                db.register_query(name.strip(), sql_text.strip())
        elif verb == "failed":  # queries isolated by the last cycle, and why
            names, _, fragment = text.partition(":")
            failed = {q.name: q.error for q in db.queries() if q.status != "ok"}
            assert set(failed) == {n.strip() for n in names.split(",")}, failed
            assert all(fragment.strip() in error for error in failed.values()), failed
        elif verb == "changes":
            name, _, literal = text.partition(":")
            assert bag(db.new_results(name.strip())) == bag(rows(literal)), f"changes of {name}"
        else:
            raise ValueError(f"unknown scenario step {verb!r}")
