"""`argus run` from cron in a session that runs cycles only (argus.lean): taken only
where the full connect would merely check, and giving the answers a full session gives
(the oracle)."""

from __future__ import annotations

import subprocess
import sys

import argus
from argus import lean

from .test_cli import invoke


def test_a_cycle_only_session_runs_where_nothing_needs_checking(transfers, fresh_dsn):
    transfers.register("big", "SELECT tran_id, sender FROM transfers WHERE amount > 100")
    transfers.register("per_sender", "SELECT sender, count(*) AS n FROM transfers "
                                     "GROUP BY sender")
    for i, day in enumerate((1, 2, 3)):
        transfers.insert("transfers", [(10 * i + k, f"2024-01-0{day}", f"a{k % 3}", "b",
                                        50 * k) for k in range(10)])
        with lean.session(fresh_dsn) as cycles:
            report = transfers.run(cycles.run)  # (the oracle: answers as PostgreSQL's)
        assert report.total_in == 10 and report.new_rows["big"] > 0


def ready(dsn: str) -> bool:
    """Whether a cycle-only session is taken (closed again)."""
    session = lean.session(dsn)
    if session is not None:
        session.close()
    return session is not None


def test_anything_to_check_or_carry_out_takes_the_full_connect(transfers, fresh_dsn, login):
    conn = transfers.conn
    assert ready(fresh_dsn)
    # another argus's files brought the catalog up to date (or are doing so)
    conn.execute("UPDATE argus_catalog.program_state SET source_fingerprint = 'another'")
    assert not ready(fresh_dsn)
    argus.connect(fresh_dsn).close()  # (this argus's full connect: checked, recorded)
    with lean.session(fresh_dsn) as cycles:
        assert cycles.run().run_id
    role, dsn = login("writer")
    transfers.db.grant("writer", role)
    assert not ready(dsn)  # (not argus's owner)
    role, dsn = login("registrar")
    transfers.db.grant("registrar", role)
    with argus.connect(dsn) as registrar:  # (a request argus run carries out first)
        registrar.conn.execute("INSERT INTO argus_catalog.requests (kind, name, body) "
                               "VALUES ('register', 'mine', %s)",
                               ('{"sql": "SELECT tran_id FROM transfers"}',))
    assert not ready(fresh_dsn)
    out = invoke(fresh_dsn, "run")
    assert out.exit_code == 0 and "request 1 of" in out.output, out.output  # (carried out)
    assert ready(fresh_dsn)


def test_argus_run_imports_neither_the_planner_nor_the_api():
    """What `argus run` imports before it connects: no sqlglot, no argus.api, no node
    compilers (a cron cycle paid ~0.45 s to import them)."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, argus.cli, argus.lean, argus.dsn; "
                               "print(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True).stdout.split()
    assert not {"sqlglot", "argus.api", "argus.nodes", "argus.network",
                "argus.frontend"} & set(loaded)
