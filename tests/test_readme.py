"""The README and its pages in docs/ say true things: every example of the tables of
refused constructs (docs/sql.md) is refused, naming the construct, with nothing changed;
those it says a re-run query may hold register with evaluate='rerun' and are exact; the
README's Python and SQLAlchemy examples, the psql consumer (docs/results.md) and the
examples of docs/tables.md and docs/windows.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from argus import QueryError

README = Path(__file__).parent.parent / "README.md"
DOCS = README.parent / "docs"


def table(heading: str) -> list[tuple[str, str]]:
    """(construct, example) rows of docs/sql.md's table whose first header is `heading`."""
    lines = (DOCS / "sql.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {heading} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        construct, example = (cell.strip() for cell in line.strip("|").rsplit("|", 1))
        rows.append((construct, re.fullmatch(r"`(.+)`", example).group(1)))
    return rows


RERUNNABLE = table("refused unless re-run")
NEVER = table("refused however it is registered")


@pytest.mark.parametrize("construct, example", RERUNNABLE + NEVER,
                         ids=[c[:50] for c, _ in RERUNNABLE + NEVER])
def test_each_refused_example_is_refused(transfers, construct, example):
    before = transfers.conn.execute("SELECT count(*) FROM pg_class").fetchone()
    with pytest.raises(QueryError):
        transfers.db.register_query("q", example)
    assert transfers.db.queries() == []
    assert transfers.conn.execute("SELECT count(*) FROM pg_class").fetchone() == before


@pytest.mark.parametrize("construct, example", RERUNNABLE, ids=[c[:50] for c, _ in RERUNNABLE])
def test_each_example_refused_unless_re_run_is_kept_when_re_run(transfers, construct, example):
    transfers.insert("transfers", [(1, "2024-01-01", "a", "b", 10), (2, "2024-01-02", "b", "a", 5)])
    transfers.run()
    transfers.register("q", example, evaluate="rerun")
    transfers.insert("transfers", [(3, "2024-01-03", "a", "c", 7)])
    transfers.run()


@pytest.mark.parametrize("construct, example", NEVER, ids=[c[:50] for c, _ in NEVER])
def test_each_example_refused_however_registered_is_refused_re_run(transfers, construct,
                                                                   example):
    with pytest.raises(QueryError):
        transfers.db.register_query("q", example, evaluate="rerun")


def _blocks(language: str, page: Path, after: str = "") -> list[str]:
    """The ```language code blocks of `page` (in its section headed `after`, if given)."""
    text = page.read_text()
    if after:
        text = text[text.index(f"\n## {after}\n"):]
        text = text[:text.find("\n## ", 1)]
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_python_quickstart_runs_as_written(fresh_dsn, monkeypatch, capsys):
    """The README's first Python example, verbatim, on a fresh database ($ARGUS_DSN, as
    its comment says), giving the answers its comments show."""
    from decimal import Decimal

    monkeypatch.setenv("ARGUS_DSN", fresh_dsn)
    code = _blocks("python", README, "Python")[0]
    body, end = code.split("db.unregister_query", 1)
    namespace: dict = {}
    exec(compile(body, "README.md", "exec"), namespace)  # noqa: S102 - our README
    shown = [m.groups() for m in re.finditer(r"^(db\.\w+\(\"big\"\))\s+# [^:\n]+: (\[[^…\n]*\])$",
                                            body, re.M)]
    assert shown, "the example shows no answer"
    for expression, answer in shown:
        assert eval(expression, namespace) == eval(answer, {"Decimal": Decimal}), expression
    exec(compile("db.unregister_query" + end, "README.md", "exec"), namespace)  # noqa: S102
    assert "query big" in capsys.readouterr().out  # print(db.explain("big"))


def test_the_psql_subscription_runs_as_written(db):
    """The psql consumer of docs/results.md, statement by statement as psql
    would send them, over a query 'big' with a consumer 'billing': each runs, the
    snapshot is the answer, LISTEN hears the next cycle, and changes_since gives its
    changes."""
    import json

    (block,) = _blocks("sql", DOCS / "results.md")
    code = "\n".join(line.split("--")[0] for line in block.splitlines())
    statements = [s.strip() for s in code.split(";") if s.strip()]
    db.create_stream("t", {"id": "bigint", "v": "int"})
    db.register_query("big", "SELECT id, v FROM t WHERE v > 10")
    db.insert("t", [(1, 20), (2, 5)])
    db.run()
    read, run = {}, None
    with psycopg.connect(db.dsn, autocommit=True) as psql:
        for statement in statements:
            if list(read)[-1:] == ["LISTEN argus_cycle"]:  # a cycle, heard
                db.insert("t", [(3, 30)])
                run = db.run().run_id
                notice = next(psql.notifies(timeout=5, stop_after=1))
                assert json.loads(notice.payload)["queries"] == ["big"]
            if run is not None:  # (the example's positions: the cycle's, the one before)
                statement = statement.replace("42", str(run)).replace("41", str(run - 1))
            cursor = psql.execute(statement)
            read[statement] = cursor.fetchall() if cursor.description else None
    (snapshot,) = [rows for s, rows in read.items() if "argus_results.big" in s]
    assert [row[1:] for row in snapshot] == [(1, 20)]
    (changes,) = [rows for s, rows in read.items() if "changes_since" in s]
    assert [row[1:] for row in changes] == [(1, {"id": 3, "v": 30})]


def test_the_sqlalchemy_example_runs_as_written(fresh_dsn):
    """The README's SQLAlchemy example, verbatim but for the engine's URL (the test's
    database): the stream declared by a Table, the query a select(), and the answer read
    back with pandas after rows arrive."""
    sa = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed")
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    import argus

    code = _blocks("python", README, "Python")[1]
    parts = conninfo_to_dict(fresh_dsn)
    url = sa.engine.URL.create("postgresql+psycopg", parts.get("user"), parts.get("password"),
                               parts.get("host"), parts.get("port"), parts.get("dbname"))
    body, last = code.rstrip().rsplit("\n", 1)
    assert '"postgresql+psycopg://app@db/payments"' in body
    body = body.replace('"postgresql+psycopg://app@db/payments"', "URL")
    namespace = {"argus": argus, "pd": pd, "URL": url}
    exec(compile(body, "README.md", "exec"), namespace)  # noqa: S102 - our README
    db = namespace["db"]
    db.insert("transfers", [(1, "ann", 9_000), (2, "ann", 3_000), (3, "bob", 1_500)])
    db.run()
    frame = eval(last.split("#")[0], namespace)  # noqa: S307 - our README
    assert frame.values.tolist() == [["ann", 12_000]]
    db.close()


def test_the_tables_example_runs_as_written(db):
    """docs/tables.md's Python example, verbatim: the table holds what it says."""
    (code,) = _blocks("python", DOCS / "tables.md")
    exec(compile(code, "docs/tables.md", "exec"), {"db": db})  # noqa: S102 - our docs
    assert db.conn.execute("SELECT id, customer, balance::text FROM argus_streams.accounts"
                           ).fetchall() == [(2, "acme", "7.00")]


def test_the_windows_example_runs_as_written(db):
    """docs/windows.md's Python example, verbatim: an hour's window over the stream's
    own clock (the latest event time), counted per key."""
    import datetime as dt

    (code,) = _blocks("python", DOCS / "windows.md")
    exec(compile(code, "docs/windows.md", "exec"), {"db": db})  # noqa: S102 - our docs
    at = dt.datetime(2026, 1, 1, 12, tzinfo=dt.timezone.utc)
    hour = dt.timedelta(hours=1)
    db.insert("events", [(1, at - 2 * hour, "a"), (2, at - hour / 12, "a"), (3, at, "b")])
    db.run()
    assert sorted(db.results("last_hour")) == [("a", 1), ("b", 1)]
