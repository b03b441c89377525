"""The node audit (argus explain --audit): a cycle over a sample of new rows, every
statement EXPLAIN ANALYZEd, attributed to its node, and flagged where it reads far more
than its delta; nothing of it is kept."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from argus import audit
from argus.cli import main


@pytest.fixture
def network(db):
    if not db.conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                           ).fetchone()[0]:
        pytest.skip("the audit needs a superuser's session (auto_explain)")
    db.create_stream("a", {"k": "int", "x": "int"})
    db.create_stream("b", {"k": "int", "y": "int"})
    db.register_query("j", "SELECT a.k, a.x, b.y FROM a JOIN b ON a.k = b.k")
    db.register_query("g", "SELECT k, count(*) AS n, sum(x) AS s FROM a GROUP BY k")
    db.insert("a", [(i % 5000, i) for i in range(50_000)])
    db.insert("b", [(i, i) for i in range(5000)])
    db.run()
    db.conn.execute("ANALYZE argus_streams.a, argus_streams.b")
    return db


def test_the_audit_attributes_each_statement_and_keeps_nothing(network):
    runs = network.conn.execute("SELECT count(*) FROM argus_catalog.runs").fetchone()
    rows = network.conn.execute("SELECT count(*) FROM argus_streams.a").fetchone()
    statements = audit.audit(network.conn, 50)
    kinds = {s.kind for s in statements if s.node_id is not None}
    assert {"stream", "join", "aggregate"} <= kinds
    join = [s for s in statements if s.kind == "join" and "delta" in s.action]
    assert join and max(s.delta_rows for s in join) == 50  # (45 rows of a, 5 of b)
    assert network.conn.execute("SELECT count(*) FROM argus_catalog.runs").fetchone() == runs
    assert network.conn.execute("SELECT count(*) FROM argus_streams.a").fetchone() == rows
    assert [s.node_id for s in audit.audit(network.conn, 50, "g") if s.node_id] \
        and all(s.kind in ("stream", "aggregate")
                for s in audit.audit(network.conn, 50, "g") if s.node_id)


def test_a_statement_that_reads_a_whole_history_is_flagged(network):
    """With index scans off, the join reads a's 50,000 rows for a delta of 10: flagged
    (and the audit fails from the command line)."""
    network.conn.execute("SET enable_indexscan = off")
    network.conn.execute("SET enable_bitmapscan = off")
    try:
        flagged = [s for s in audit.audit(network.conn, 10) if s.flags]
    finally:
        network.conn.execute("RESET enable_indexscan")
        network.conn.execute("RESET enable_bitmapscan")
    assert any(s.kind == "join" and "of a:" in " ".join(s.flags) for s in flagged), \
        audit.report(flagged)
    out = CliRunner().invoke(main, ["explain", "--audit", "--rows", "10", "--dsn",
                                    network.dsn])
    assert "a sample of 10 rows per stream" in out.output
