"""Which nodes keep tables (conditional materialization, settings.virtual_selectivity),
and that every layout gives the same answers as PostgreSQL (the oracle)."""

from __future__ import annotations

import random

import pytest

from .test_sharing import transfer_rows

# name -> (query, whether its selection over the stream is a view by default)
QUERIES = {
    "all_rows": ("SELECT tran_id, sender FROM transfers WHERE receiver IS NOT NULL", True),
    "wide": ("SELECT tran_id, amount FROM transfers WHERE amount > 10", True),
    "narrow": ("SELECT tran_id FROM transfers WHERE tran_id = 7", False),
    "can_fail": ("SELECT tran_id FROM transfers WHERE 100 / amount > 0", False),
}
# queries over those selections: joins probing the stream through a view, an aggregate
# and a DISTINCT reading a view's changes, a windowed selection under none of them
ABOVE = {
    "chain": "SELECT a.tran_id, b.tran_id AS next FROM transfers a JOIN transfers b "
             "ON a.receiver = b.sender WHERE a.amount > 10 AND b.amount > 5",
    "per_sender": "SELECT sender, count(*) AS n, max(amount) AS top FROM transfers "
                  "WHERE amount > 10 GROUP BY sender",
    "senders": "SELECT DISTINCT sender FROM transfers WHERE amount > 1",
    "recent": "SELECT tran_id FROM transfers WHERE tran_date > argus_now() - interval '3 days'",
}


def kinds_of_tables(db, name: str) -> set[str]:
    """'r' (a table) or 'v' (a view) for each selection of the query."""
    return {relkind for (relkind,) in db.conn.execute(
        """SELECT c.relkind FROM argus_catalog.query_nodes qn
             JOIN argus_catalog.queries q USING (query_id)
             JOIN argus_catalog.nodes n ON n.node_id = qn.node_id
             JOIN pg_class c ON c.oid = format('%%I.%%I', n.hist_schema, n.hist_name)::regclass
            WHERE q.name = %s AND n.kind = 'select'""", (name,))}


@pytest.mark.parametrize("share", [None, 0.0, 0.3], ids=["tables", "views", "default"])
def test_every_layout_gives_postgresqls_answers(transfers, share):
    rng = random.Random(3)
    transfers.insert("transfers", transfer_rows(rng, 0, 200))
    transfers.run()
    transfers.db.configure(virtual_selectivity=share)
    for name, (query, _) in QUERIES.items():
        transfers.register(name, query)
    for name, query in ABOVE.items():
        transfers.register(name, query)
    for day in range(2, 6):
        transfers.db.configure(truncate_inbox_bytes=1 if day % 2 else 1 << 40)  # locked claims
        transfers.insert("transfers", transfer_rows(rng, day * 1000, 150, day=day))
        transfers.run()  # every answer and change against PostgreSQL's
    for name, (_, view) in QUERIES.items():
        expected = {"r"} if share is None or not (view or share == 0.0) else {"v"}
        if name == "can_fail":
            expected = {"r"}  # never a view: it could fail when read
        assert kinds_of_tables(transfers.db, name) == expected, name
    assert kinds_of_tables(transfers.db, "recent") == {"r"}  # windows keep their rows


def test_a_node_made_under_one_layout_is_shared_under_another(transfers):
    """Whether a node keeps a table is a choice of layout, not part of what it computes."""
    transfers.insert("transfers", transfer_rows(random.Random(4), 0, 50))
    transfers.run()
    made = {}
    for name, share, query in [
            ("view", 0.3, "SELECT tran_id, amount FROM transfers WHERE amount > 10"),
            ("view_again", None, "SELECT tran_id, amount FROM transfers WHERE amount > 10"),
            ("table", None, "SELECT tran_id, amount FROM transfers WHERE amount > 20"),
            ("table_again", 0.0, "SELECT tran_id, amount FROM transfers WHERE amount > 20")]:
        transfers.db.configure(virtual_selectivity=share)
        made[name] = transfers.register(name, query)
    assert made["view_again"].output_node == made["view"].output_node
    assert made["table_again"].output_node == made["table"].output_node
    relkind = "SELECT relkind FROM pg_class WHERE oid = %s::regclass"
    assert transfers.conn.execute(relkind, (f"argus_net.n{made['view'].output_node}",)
                                  ).fetchone() == ("v",)
    assert transfers.conn.execute(relkind, (f"argus_net.n{made['table'].output_node}",)
                                  ).fetchone() == ("r",)
    assert "its history is a view" in transfers.db.explain("view")
    transfers.insert("transfers", transfer_rows(random.Random(5), 100, 50, day=2))
    transfers.run()
