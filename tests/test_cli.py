"""The command line, against a real database."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from click.testing import CliRunner
from psycopg.conninfo import make_conninfo

from argus import roles
from argus.cli import main


def invoke(dsn, *args, input=None):
    result = CliRunner().invoke(main, [*args, "--dsn", dsn], input=input, catch_exceptions=False)
    return result


def test_cli_walkthrough(fresh_dsn, tmp_path):
    assert invoke(fresh_dsn, "init").exit_code == 0
    out = invoke(fresh_dsn, "stream", "create", "transfers", "tran_id:bigint", "sender:text",
                 "amount:numeric(14,2)")
    assert out.exit_code == 0, out.output
    query = tmp_path / "big.sql"
    query.write_text("SELECT tran_id, amount FROM transfers WHERE amount > 100")
    out = invoke(fresh_dsn, "register", "big", "-f", str(query))
    assert out.exit_code == 0 and "registered" in out.output
    out = invoke(fresh_dsn, "register", "small", "--dry-run", "--sql",
                 "SELECT tran_id FROM transfers WHERE amount < 5")
    assert out.exit_code == 0 and "nothing was registered" in out.output
    assert "query small" in out.output and "where" in out.output, out.output
    out = invoke(fresh_dsn, "register", "small", "--sql",
                 "SELECT tran_id FROM transfers WHERE amount < 5")
    assert out.exit_code == 0

    import argus

    with argus.connect(fresh_dsn) as db:
        db.insert("transfers", [(1, "a", 500), (2, "b", 1), (3, "c", 50)])
    out = invoke(fresh_dsn, "run")
    assert out.exit_code == 0 and "3 rows in" in out.output and "big: +1" in out.output
    out = invoke(fresh_dsn, "results", "big")
    assert "500.00" in out.output
    out = invoke(fresh_dsn, "results", "small", "--changes")
    assert "argus_sign" in out.output
    out = invoke(fresh_dsn, "explain", "big")
    assert "where" in out.output and "INSERT INTO" not in out.output
    out = invoke(fresh_dsn, "explain", "big", "--code")
    assert "INSERT INTO" in out.output
    out = invoke(fresh_dsn, "status")
    assert "2 queries, 2 nodes" in out.output and "transfers" in out.output
    out = invoke(fresh_dsn, "stream", "list")
    assert "numeric(14,2)" in out.output
    assert invoke(fresh_dsn, "drop", "big").exit_code == 0
    assert invoke(fresh_dsn, "drop", "small").exit_code == 0
    with argus.connect(fresh_dsn) as db:  # no query reads it now: its rows wait
        db.insert("transfers", [(4, "d", 7)])
    assert invoke(fresh_dsn, "run").exit_code == 0
    out = invoke(fresh_dsn, "status")
    assert "1 (no query reads it: see unread_inbox_bytes)" in out.output, out.output
    assert invoke(fresh_dsn, "stream", "drop", "transfers").exit_code == 0


def test_cli_errors_are_clear_and_exit_nonzero(fresh_dsn):
    out = invoke(fresh_dsn, "register", "q", "--sql", "SELECT x FROM nowhere")
    assert out.exit_code == 1 and "unknown stream 'nowhere'" in out.output
    out = invoke(fresh_dsn, "register", "q")
    assert out.exit_code != 0 and "exactly one of --sql or -f" in out.output
    out = invoke(fresh_dsn, "stream", "create", "s", "nocolon")
    assert out.exit_code != 0 and "name:type" in out.output
    out = invoke(fresh_dsn, "explain", "nope")
    assert out.exit_code == 1 and "unknown query 'nope'" in out.output


def test_run_skips_when_another_cycle_holds_the_lock(fresh_dsn):
    import psycopg

    from argus.names import LOCK_CYCLES

    invoke(fresh_dsn, "init")
    with psycopg.connect(fresh_dsn) as holder:
        holder.execute(LOCK_CYCLES)
        out = invoke(fresh_dsn, "run")
    assert out.exit_code == 0 and "skipped" in out.output


def test_demo_runs_on_a_given_server(admin_dsn):
    """In a database of a name the test made unique (the default, argus_demo, may be a
    user's on this server: issue 54)."""
    name = f"argus_demo_t{os.getpid()}"
    out = invoke(admin_dsn, "demo", "--cycles", "2", "--history", "2000", "--batch", "500",
                 "--into", name)
    assert out.exit_code == 0, out.output
    assert "cycle 2" in out.output and "re-running" in out.output
    assert f"database {name} on" in out.output and f"argus psql -d {name}" in out.output
    # the README's psql session after `argus demo`, statement by statement
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    typed = [line.split("argus_demo=> ", 1)[1] for line in readme.splitlines()
             if line.startswith("argus_demo=> ")]
    assert typed, "the README shows no psql session after the demo"
    with psycopg.connect(make_conninfo(admin_dsn, dbname=name), autocommit=True) as psql:
        read = {}
        for statement in typed:
            cursor = psql.execute(statement)
            read[statement] = cursor.fetchall() if cursor.description else None
    (changes,) = [rows for s, rows in read.items() if "argus_changes.big_transfers" in s]
    assert [row[0] for row in changes] == [9000001], changes  # (the row typed in, +1)
    roles.drop_database(admin_dsn, name)


def test_cli_rerun_and_back(fresh_dsn):
    invoke(fresh_dsn, "init")
    invoke(fresh_dsn, "stream", "create", "t", "k:int", "v:int")
    out = invoke(fresh_dsn, "register", "per_k", "--rerun", "--sql",
                 "SELECT k, sum(v) AS total FROM t GROUP BY k")
    assert out.exit_code == 0, out.output
    import argus

    with argus.connect(fresh_dsn) as db:
        db.insert("t", [(1, 2), (1, 3), (2, 5)])
    assert "per_k: +2" in invoke(fresh_dsn, "run").output
    assert "evaluated by re-running it" in invoke(fresh_dsn, "explain", "per_k").output
    out = invoke(fresh_dsn, "optimize", "--query", "per_k", "--evaluate", "incremental")
    assert out.exit_code == 0 and "per_k" in out.output and "yes" in out.output
    assert "re-running" not in invoke(fresh_dsn, "explain", "per_k").output.split("nodes")[0]
    with argus.connect(fresh_dsn) as db:
        assert sorted(db.results("per_k")) == [(1, 5), (2, 5)]


def test_every_command_takes_a_database_and_output_is_not_wrapped_in_a_pipe(fresh_dsn,
                                                                         admin_dsn):
    """-d/--database names another database on the same server (here the test's, from
    the server's maintenance database); written to a pipe, long lines stay whole."""
    from psycopg.conninfo import conninfo_to_dict

    name = conninfo_to_dict(fresh_dsn)["dbname"]
    long_sql = ("SELECT tran_id, amount FROM transfers WHERE amount > 100 AND sender <> "
                "'a rather long account name that no terminal of eighty columns would hold'")
    assert invoke(admin_dsn, "stream", "create", "transfers", "tran_id:bigint",
                  "sender:text", "amount:numeric", "-d", name).exit_code == 0
    assert invoke(admin_dsn, "register", "big", "--sql", long_sql, "-d", name).exit_code == 0
    out = invoke(admin_dsn, "status", "-d", name)
    assert out.exit_code == 0 and f"database {name!r}" in out.output
    out = invoke(admin_dsn, "explain", "big", "--database", name)
    assert out.exit_code == 0 and long_sql in out.output  # one line, as written


def test_explain_draws_the_query_s_nodes(fresh_dsn, tmp_path):
    """--svg: a box per node of the query (by kind), an edge per parent, the query."""
    import xml.etree.ElementTree as ET

    import argus

    with argus.connect(fresh_dsn) as db:
        db.create_stream("t", {"k": "int", "v": "int"})
        db.create_stream("u", {"k": "int", "w": "text"})
        db.register_query("joined", "SELECT t.k, count(*) AS n, max(u.w) AS w FROM t JOIN u "
                                    "ON u.k = t.k WHERE t.v > 0 GROUP BY t.k")
        db.insert("t", [(1, 5), (2, 7)])
        db.insert("u", [(1, "<a & b>")])
        db.run()
        nodes = {n.id: n.kind for n in db.query("joined").nodes}
        edges = db.conn.execute(
            "SELECT count(*) FROM argus_catalog.edges WHERE child_id = ANY(%s) "
            "AND parent_id = ANY(%s)", (list(nodes), list(nodes))).fetchone()[0]
    out = invoke(fresh_dsn, "explain", "joined", "--svg", str(tmp_path / "q.svg"))
    assert out.exit_code == 0, out.output
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.parse(tmp_path / "q.svg").getroot()  # well-formed: the text is escaped
    drawn = {int(g.get("data-node")): g.get("data-kind") for g in root.iterfind("s:g", ns)
             if g.get("class") == "node"}
    assert drawn == nodes and {"stream", "join", "aggregate"} <= set(drawn.values())
    assert len([e for e in root.iterfind("s:line", ns) if e.get("data-parent")]) == edges
    assert any("query joined" in "".join(g.itertext()) for g in root.iterfind("s:g", ns))
    labels = {g.get("data-kind"): next(g.iterfind("s:text", ns)).text
              for g in root.iterfind("s:g", ns) if g.get("class") == "node"}
    assert labels["join"].startswith("⋈ ") and "=" in labels["join"]  # what each computes
    assert labels["aggregate"].startswith("γ ") and labels["stream"] in ("stream t", "stream u")
    out = invoke(fresh_dsn, "explain", "nope", "--svg", str(tmp_path / "n.svg"))
    assert out.exit_code == 1 and "unknown query 'nope'" in out.output


def test_run_every_runs_cycles_in_one_session(fresh_dsn):
    """`argus run --every` keeps one session (one backend for every cycle, so the
    compiled network is reused), and takes rows loaded while it waits."""
    import threading

    import argus

    invoke(fresh_dsn, "init")
    invoke(fresh_dsn, "stream", "create", "t", "k:int", "v:int")
    invoke(fresh_dsn, "register", "total", "--sql", "SELECT k, sum(v) AS s FROM t GROUP BY k")
    with argus.connect(fresh_dsn) as db:
        db.insert("t", [(1, 2), (2, 3)])
        first = db.conn.execute("SELECT coalesce(max(run_id), 0) FROM argus_catalog.runs"
                                ).fetchone()[0]
        def load_while_it_waits() -> None:
            with argus.connect(fresh_dsn) as other:
                other.insert("t", [(1, 5)])

        loader = threading.Timer(1.2, load_while_it_waits)
        loader.start()
        out = invoke(fresh_dsn, "run", "--every", "1s", "--cycles", "3")
        loader.join()
        assert out.exit_code == 0, out.output
        assert out.output.count("run ") == 3 and "total: +2 -0" in out.output
        runs = db.conn.execute("SELECT count(*) FROM argus_catalog.runs WHERE run_id > %s "
                               "AND status = 'ok'", (first,)).fetchone()[0]
        assert runs == 3
        assert sorted(db.results("total")) == [(1, 7), (2, 3)]
    for bad in (["--every", "0s"], ["--every", "soon"], ["--every", "5ms"],
                ["--every", "2d"], ["--cycles", "2"]):
        out = invoke(fresh_dsn, "run", *bad)
        assert out.exit_code != 0 and ("--every" in out.output or "--cycles" in out.output)


def test_run_every_goes_on_after_the_server_drops_its_session(fresh_dsn):
    """A cycle whose session is terminated fails and rolls back; the loop reconnects and
    the next cycle claims the rows."""
    import threading

    import psycopg

    import argus
    from argus.names import LOCK_CYCLES

    invoke(fresh_dsn, "init")
    invoke(fresh_dsn, "stream", "create", "t", "k:int")
    invoke(fresh_dsn, "register", "all_k", "--sql", "SELECT k FROM t")
    with argus.connect(fresh_dsn) as db:
        db.insert("t", [(1,), (2,)])
    with psycopg.connect(fresh_dsn) as holder, \
            psycopg.connect(fresh_dsn, autocommit=True) as watcher:
        holder.execute(LOCK_CYCLES)

        def kill_the_waiting_cycle() -> None:  # then let the next one through
            pid = None
            while pid is None:
                pid = watcher.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE '%argus.cycle%'").fetchone()
            watcher.execute("SELECT pg_terminate_backend(%s)", pid)
            holder.rollback()

        killer = threading.Thread(target=kill_the_waiting_cycle)
        killer.start()
        out = invoke(fresh_dsn, "run", "--wait", "--every", "1s", "--cycles", "2")
        killer.join()
    assert out.exit_code == 0, out.output
    assert "error:" in out.output and "all_k: +2" in out.output
    with argus.connect(fresh_dsn) as db:
        assert sorted(db.results("all_k")) == [(1,), (2,)]


def test_errors_keep_their_brackets(fresh_dsn):
    """Issue 54: messages went through rich markup, which ate `[spark]` from install
    hints and any bracketed text of the user's."""
    out = invoke(fresh_dsn, "register", "a[spark]", "--sql", "SELECT 1")
    assert out.exit_code == 1 and "a[spark]" in out.output, out.output


def test_quarantine_and_results_read_no_more_than_they_show(fresh_dsn):
    """Issue 54: `argus quarantine` fetched every held row into one table (7 GB for two
    million) and `argus results --limit 2` read a whole answer; now a summary per
    stream, the rows only with --limit, and LIMIT on the server."""
    import argus

    with argus.connect(fresh_dsn) as db:
        db.create_stream("u", {"id": "int", "t": "timestamptz"}, time_column="t")
        db.register_query("ids", "SELECT id FROM u")
        db.insert("u", [(i, f"2024-01-01 00:{i:02d}+00") for i in range(30)]
                  + [(100 + i, "2204-01-01 00:00+00") for i in range(5)])
        db.run()
        assert [r[:2] for r in db.quarantine_summary()] == [("u", 5)]
        assert len(db.quarantined(limit=2)) == 2 and len(db.results("ids", limit=3)) == 3
    out = invoke(fresh_dsn, "quarantine")
    assert out.exit_code == 0 and "quarantine: 5 rows" in out.output, out.output
    assert "2204-01-01" in out.output and "'id': 100" not in out.output
    out = invoke(fresh_dsn, "quarantine", "--limit", "2")
    assert "the first 2" in out.output and "'id': 100" in out.output, out.output
    out = invoke(fresh_dsn, "results", "ids", "--limit", "2")
    assert "ids: 30 rows, the first 2" in out.output, out.output


def test_every_command_says_what_it_does():
    """Issue 54: `stream create` and `table create` were listed as "Create stream NAME,
    e.g." (click cuts a short help at its first period), `server start/stop/status` as
    nothing."""
    import click

    def commands(group, path=()):
        for name, command in group.commands.items():
            yield (*path, name), command
            if isinstance(command, click.Group):
                yield from commands(command, (*path, name))

    for path, command in commands(main):
        short = command.get_short_help_str(limit=200)
        assert short and not short.endswith(("e.g.", "e.g")), (" ".join(path), short)


def test_a_database_that_does_not_exist_is_named_with_what_to_do(admin_dsn):
    from psycopg.conninfo import make_conninfo

    out = invoke(make_conninfo(admin_dsn, dbname=f"argus_absent_{os.getpid()}"), "status")
    assert out.exit_code == 1 and f"createdb argus_absent_{os.getpid()}" in out.output, \
        out.output


def test_config_lists_every_setting_with_the_experts_apart(fresh_dsn):
    from argus.settings import EXPERT, SETTINGS

    out = invoke(fresh_dsn, "config")
    assert out.exit_code == 0, out.output
    common, _, expert = out.output.partition("for experts")
    assert expert and EXPERT < set(SETTINGS)
    for key in SETTINGS:
        assert key in (expert if key in EXPERT else common), key
    out = invoke(fresh_dsn, "config", "purge", "off")
    assert out.exit_code == 0 and "False" in out.output and "for experts" not in out.output
    assert "True" in out.output  # its default (argus.settings.SETTINGS)
    out = invoke(fresh_dsn, "config", "plan_kept_rows")
    assert "for experts" in out.output and "purge" not in out.output
    out = invoke(fresh_dsn, "config", "purg", "on")
    assert out.exit_code != 0 and "unknown setting 'purg'" in out.output
