"""A LEFT JOIN whose padded rows the WHERE drops is maintained as an inner join
(argus.frontend.outer.inner_when_rejected): a scalar subquery compared in the WHERE
then joins on the comparison, and its join keeps the rows that pass, not every row
paired with the value. Answers: the oracle's, after every cycle."""

from __future__ import annotations

import datetime as dt

import pytest

TOTALS = "SELECT sender, sum(amount) AS total FROM transfers GROUP BY sender"
TOP = (f"SELECT r.sender, r.total FROM ({TOTALS}) AS r "
       f"WHERE r.total = (SELECT max(m.total) FROM ({TOTALS}) AS m)")


def join_types(db, name: str) -> list[str]:
    return [t for (t,) in db.conn.execute(
        "SELECT n.definition ->> 'join_type' FROM argus_catalog.nodes n "
        "JOIN argus_catalog.query_nodes qn USING (node_id) "
        "JOIN argus_catalog.queries q USING (query_id) "
        "WHERE q.name = %s AND n.kind = 'join' ORDER BY n.node_id", (name,))]


def held_by_joins(db, name: str) -> int:
    """Rows the query's join nodes hold and wrote in the last cycle."""
    return db.conn.execute(
        "SELECT sum(s.hist_rows + r.inserted + r.retracted) FROM argus_catalog.nodes n "
        "JOIN argus_catalog.query_nodes qn USING (node_id) "
        "JOIN argus_catalog.queries q USING (query_id) "
        "JOIN argus_catalog.node_stats s USING (node_id) "
        "JOIN argus_catalog.run_nodes r ON r.node_id = n.node_id "
        " AND r.run_id = (SELECT max(run_id) FROM argus_catalog.runs) "
        "WHERE q.name = %s AND n.kind = 'join'", (name,)).fetchone()[0] or 0


def rows(first: int, senders: int, amount: int) -> list[tuple]:
    return [(first + i, dt.date(2024, 1, 1), f"s{i % senders}", "r", amount + i % senders)
            for i in range(senders * 3)]


def test_a_maximum_compared_in_the_where_joins_on_it(transfers):
    """TPC-H Q15's shape: the senders whose total is the largest. The join with the
    maximum keeps the senders that have it, and a cycle that moves the maximum writes
    a few rows, not one per sender (it wrote every sender's again)."""
    transfers.insert("transfers", rows(0, 200, 10))
    transfers.run()
    transfers.register("top", TOP)
    assert join_types(transfers.db, "top") == ["inner"]
    for batch in range(1, 4):  # each batch raises every total: a new maximum
        transfers.insert("transfers", rows(1000 * batch, 200, 10 * batch))
        transfers.run()
        assert 0 < held_by_joins(transfers.db, "top") < 20
    assert [sender for sender, _ in transfers.db.results("top")] == ["s199"]


@pytest.mark.parametrize("where, joined", [
    ("b.total > 40", "inner"),
    ("b.total IS NOT NULL", "inner"),
    ("2 * b.total + a.amount > 90", "inner"),
    ("b.total IS NULL", "left"),  # the padded rows are the answer
    ("coalesce(b.total, 0) < 40", "left"),  # (a padded row passes)
    ("b.total > 40 OR a.amount > 0", "left"),  # (a term of an OR rejects nothing alone)
])
def test_only_a_where_that_drops_the_padded_rows_makes_an_inner_join(transfers, where,
                                                                      joined):
    transfers.insert("transfers", rows(0, 20, 10))
    transfers.run()
    transfers.register("q", f"SELECT a.tran_id, b.total FROM transfers a LEFT JOIN "
                            f"(SELECT sender, sum(amount) AS total FROM transfers "
                            f"WHERE receiver = 'r' AND amount > 12 GROUP BY sender) b "
                            f"ON a.sender = b.sender WHERE {where}")
    assert joined in join_types(transfers.db, "q")
    transfers.insert("transfers", rows(100, 20, 1))  # totals move below and past 40
    transfers.run()


@pytest.mark.parametrize("where, joined", [
    # a correlated aggregate's value: `CASE WHEN s.argus_hit THEN … ELSE NULL END`
    ("a.amount > (SELECT 0.5 * avg(b.amount) FROM transfers b WHERE b.sender = a.sender)",
     "inner"),
    # a count is 0 where no row is counted: the row is not dropped
    ("a.amount > (SELECT count(*) FROM transfers b WHERE b.sender = a.receiver)", "left"),
])
def test_a_correlated_subquery_compared_in_the_where(transfers, where, joined):
    transfers.insert("transfers", rows(0, 20, 10))
    transfers.run()
    transfers.register("q", f"SELECT a.tran_id, a.amount FROM transfers a WHERE {where}")
    assert join_types(transfers.db, "q") == [joined]
    transfers.insert("transfers", rows(100, 20, 1))
    transfers.run()
