"""Golden files: checked without a server, each recorded node's generated SQL, per kind
(tests/golden/<kind>.txt), and each query's plan (tests/golden/plans.txt); on a server,
each network's cycle program as the database assembles it (tests/golden/programs.txt).

The networks of tests/golden/networks.txt are registered once on a real server and
their nodes recorded in tests/golden/nodes.json (`python -m tests.test_golden --record`).
Compiling those nodes is pure, so a change to a compiler or a template shows here as a
diff of the SQL it generates. After a deliberate change, regenerate the files with
`ARGUS_UPDATE_GOLDEN=1 pytest tests/test_golden.py` and review the diff.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import json
import os
import sys
from pathlib import Path

import pytest

from argus.frontend.analyze import StreamSchema, analyze
from argus.nodes import COMPILERS, Node
from argus.nodes.lazy import is_lazy
from argus.nodes.purge import purge_block
from argus.program import flush_block, frame, node_block, probe_block

from .test_scenarios import parse, stream_spec

GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("ARGUS_UPDATE_GOLDEN"))
KINDS = ("stream", "select", "join", "aggregate", "distinct", "setop", "window", "recursive",
         "rerun", "lazy")  # (lazy: the joins a JISC migration builds lazily, nodes.lazy)


def networks() -> list[tuple[str, dict[str, tuple[dict[str, str], str | None]],
                              dict[str, str], set[str], list[str]]]:
    """(title, streams: name -> (columns, time column), queries: name -> SQL, the
    queries registered to be re-run: written `rerun name: …`, the queries then migrated
    by JISC: written `jisc name`)."""
    out = []
    for title, steps in parse(GOLDEN / "networks.txt"):
        streams, queries, rerun, jisc = {}, {}, set(), []
        for verb, text in steps:
            if verb == "stream":
                name, columns, time = stream_spec(text)
                streams[name] = (columns, time)
            elif verb in ("query", "rerun"):
                name, _, query = text.partition(":")
                queries[name.strip()] = query.strip()
                if verb == "rerun":
                    rerun.add(name.strip())
            elif verb == "jisc":
                jisc.append(text.strip())
        out.append((title, streams, queries, rerun, jisc))
    return out


def _text(composable) -> str:
    return "" if composable is None else composable.as_string(None)


def _node(record: dict) -> Node:
    fields = {f.name for f in dataclasses.fields(Node)}
    values = {k: tuple(v) if isinstance(v, list) and k not in ("definition", "layout") else v
              for k, v in record.items() if k in fields}
    return Node(**values)


def compiled(recorded: dict) -> dict[str, str]:
    """Each kind's golden text, from the recorded networks."""
    out = {kind: [] for kind in KINDS}
    for title, net in recorded.items():
        nodes = {n["id"]: _node(n) for n in net["nodes"]}
        children = {i: [c for c in nodes.values() if i in c.parents] for i in nodes}
        for node in nodes.values():
            parents = [nodes[p] for p in node.parents]
            compiler = COMPILERS[node.kind]
            time_column = net["time_columns"].get(str(node.id))
            sections = {
                "create": "\n".join(_text(s) for s in compiler.create(node, parents)),
                "backfill": "\n".join(_text(s) for s in compiler.backfill(node, parents)),
                "cycle": _text(node_block(node, parents, None)),
                "flush": _text(flush_block(node, parents, None)),
                "probe": _text(probe_block(node, parents, None)),
                "purge": _text(purge_block(node, children[node.id], time_column)),
            }
            out["lazy" if is_lazy(node) else node.kind].append(
                f"==== {title}: node {node.id} ({node.kind}, parents {list(node.parents)})\n"
                + "".join(f"-- {name}\n{text.strip()}\n" for name, text in sections.items()
                          if text.strip()))
        streams = [(name, nodes[i], net["time_columns"].get(str(i)))
                   for name, i in sorted(net["streams"].items())]
        out["stream"].append(f"==== {title}: the program frame\n{frame(streams)}\n")
    return {kind: "\n".join(texts) for kind, texts in out.items()}


def plans() -> str:
    lines = []
    for title, streams, queries, _, _ in networks():
        schemas = {name: StreamSchema(name, tuple(columns.items()), time)
                   for name, (columns, time) in streams.items()}
        for name, query in queries.items():
            analyzed = analyze(query, schemas)
            lines.append(f"==== {title}: {name}\n{query}\n-- canonical\n{analyzed.canonical}\n"
                         f"-- plan\n{analyzed.plan!r}\n")
    return "\n".join(lines)


def check(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        path.write_text(text)
        return
    expected = path.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            str(path), "generated", n=2))
        pytest.fail(f"{path.name} differs from what argus generates now (if deliberate: "
                    f"ARGUS_UPDATE_GOLDEN=1 pytest tests/test_golden.py):\n{diff[:6000]}")


@pytest.mark.parametrize("kind", KINDS)
def test_generated_sql_per_kind(kind):
    recorded = json.loads((GOLDEN / "nodes.json").read_text())
    check(GOLDEN / f"{kind}.txt", compiled(recorded)[kind])


def test_plans():
    check(GOLDEN / "plans.txt", plans())


@contextlib.contextmanager
def built(dsn: str, title: str, streams, queries, rerun, jisc):
    """A golden network registered in a database of its own, dropped after."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    import argus
    from argus import roles

    name = "argus_golden"
    roles.drop_database(dsn, name)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with argus.connect(make_conninfo(dsn, dbname=name)) as db:
            for stream, (columns, time) in streams.items():
                db.create_stream(stream, columns, time_column=time)
            for query, text in queries.items():
                db.register_query(query, text,
                                  evaluate="rerun" if query in rerun else "incremental")
            if jisc:
                db.configure(migration="jisc", rerun_fallback=False, virtual_join_growth=None)
                assert all(d.migrated for d in db.migrate(jisc, force=True)), jisc
            yield db
    finally:
        roles.drop_database(dsn, name)


def program(db) -> str:
    """The network's cycle program as the database assembles it from its nodes' stored
    code (argus.assemble_program): the frame and the blocks in their order."""
    db.conn.execute("SELECT argus.assemble_program()")
    (source,) = db.conn.execute(
        "SELECT prosrc FROM pg_proc WHERE oid = 'argus_net.cycle_program(bigint, jsonb, "
        "argus_catalog.settings)'::regprocedure").fetchone()
    return source.strip()


def test_assembled_programs(admin_dsn):
    """The assembled program of every golden network (tests/golden/programs.txt): a
    change to the frame, a node's code or how the database puts them together shows
    here as a diff."""
    texts = []
    for title, *network in networks():
        with built(admin_dsn, title, *network) as db:
            texts.append(f"==== {title}\n{program(db)}\n")
    check(GOLDEN / "programs.txt", "\n".join(texts))


def record(dsn: str) -> None:
    """Register the networks on a server and record their nodes (tests/golden/nodes.json)
    and assembled programs (tests/golden/programs.txt)."""
    import dataclasses as dc

    from argus import network

    recorded, texts = {}, []
    for title, *rest in networks():
        with built(dsn, title, *rest) as db:
            net = network.load(db.conn)
            times = dict(db.conn.execute(
                "SELECT node_id::text, time_column FROM argus_catalog.streams").fetchall())
            recorded[title] = {
                "streams": net.streams,
                "time_columns": {k: v for k, v in times.items() if v},
                "nodes": [dc.asdict(n) for n in net.nodes.values()]}
            texts.append(f"==== {title}\n{program(db)}\n")
    (GOLDEN / "nodes.json").write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    (GOLDEN / "programs.txt").write_text("\n".join(texts))


if __name__ == "__main__":
    if sys.argv[1:2] != ["--record"]:
        sys.exit("usage: python -m tests.test_golden --record [DSN]")
    record(sys.argv[2] if len(sys.argv) > 2 else "postgresql://postgres@127.0.0.1:5432/postgres")
