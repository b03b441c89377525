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
    """With index scans off, the join reads a's 50,000 rows for a delta of 10: flagged,
    with what probing a's index took instead (and the audit fails from the command
    line)."""
    network.conn.execute("SET enable_indexscan = off")
    network.conn.execute("SET enable_bitmapscan = off")
    try:
        flagged = [s for s in audit.audit(network.conn, 10) if s.flags]
    finally:
        network.conn.execute("RESET enable_indexscan")
        network.conn.execute("RESET enable_bitmapscan")
    assert any(s.kind == "join" and "of a:" in " ".join(s.flags) for s in flagged), \
        audit.report(flagged)
    # weighed: run again (rolled back) as planned and made to probe a's index
    assert all("probing its indexes)" in flag for s in flagged for flag in s.flags)
    out = CliRunner().invoke(main, ["explain", "--audit", "--rows", "10", "--dsn",
                                    network.dsn])
    assert "a sample of 10 rows per stream" in out.output


def test_a_join_over_a_having_reads_only_the_groups_that_pass(network):
    """TPC-H Q18's shape: orders whose line items' sum passes a bound (a HAVING, a view
    of the aggregate's groups). Without an index on the groups that pass, TPC-H's Q18
    join scanned all 150,000 groups for 5 each cycle (19 ms); argus makes a partial
    index of the groups that pass, and the join reads those only (not flagged)."""
    network.register_query("big_keys", "SELECT b.k, b.y FROM b WHERE b.k IN "
                                       "(SELECT k FROM a GROUP BY k HAVING sum(x) > 250000)")
    (predicate,) = network.conn.execute(
        "SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indpred IS NOT NULL "
        "AND c.relnamespace = 'argus_net'::regnamespace").fetchone()
    assert "250000" in predicate
    network.conn.execute("ANALYZE")
    statements = [s for s in audit.audit(network.conn, 1000, "big_keys") if s.kind == "join"]
    assert statements and not [s for s in statements if s.flags], audit.report(statements)


def test_a_projection_with_many_copies_of_a_row_retracts_only_its_copies(oracle):
    """TPC-H Q4's shape: a semi join keeping one priority per order (5 priorities,
    ~1,000 copies each) under a count per priority. Retracting a few orders deleted
    their copies by numbering every copy of their priorities: the flush read the whole
    history (flagged); it reads k copies by the hash's index now."""
    db = oracle.db
    if not db.conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                           ).fetchone()[0]:
        pytest.skip("the audit needs a superuser's session (auto_explain)")
    oracle.create_table("orders", {"k": "int", "prio": "text"}, primary_key="k")
    oracle.create_table("items", {"k": "int", "n": "int"}, primary_key=["k", "n"])
    oracle.insert("orders", [(i, f"{i % 5}-priority") for i in range(5000)])
    oracle.insert("items", [(i, n) for i in range(5000) for n in range(2)])
    oracle.register("q4", "SELECT prio, count(*) AS orders FROM orders WHERE EXISTS "
                          "(SELECT 1 FROM items WHERE items.k = orders.k) GROUP BY prio")
    oracle.run()
    db.conn.execute("ANALYZE")
    flushes = [s for s in audit.audit(db.conn, 10, "q4")
               if s.kind == "join" and not s.action.endswith("_delta")]
    assert flushes and not [s for s in flushes if s.flags], audit.report(flushes)
    oracle.delete("orders", list(range(0, 60, 3)))
    oracle.delete("items", [(k, 0) for k in range(1, 90, 3)])
    oracle.run()  # (checks every answer against its query run from scratch)


def test_a_weighing_run_stops_at_its_timeout_and_one_that_cannot_run_says_so(db):
    """A probing run stopped by its statement_timeout weighs as infinitely slow (so a
    forced nested loop of minutes is never waited for); a statement that cannot run
    again outside the cycle (it reads the program's variables) is not weighed."""
    db.create_stream("a", {"k": "int"})
    with db.conn.transaction():
        assert audit._explained_ms(db.conn, "SELECT pg_sleep(5)",
                                   {"statement_timeout": "50"}) == float("inf")
        assert audit._explained_ms(db.conn, "SELECT argus_p FROM argus_streams.a", {}) is None
        assert audit._explained_ms(db.conn, "SELECT 1", {}) >= 0
