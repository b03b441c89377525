"""Per node and per cycle, a signed node either applies its changes to its history or
rebuilds the history from its parents (node_stats, catalog/schema.sql): the choice follows
the learned costs, both paths give the oracle's answers, and explain shows the choice."""

from __future__ import annotations

import pytest

from argus import SettingError

R = {"k": "int", "g": "int", "v": "int"}
QUERIES = {
    "having": "SELECT g, count(*) AS n, sum(v) AS s FROM r GROUP BY g HAVING count(*) > 1",
    "distinct": "SELECT DISTINCT g FROM r WHERE v > 2",
    "minus": "SELECT g FROM r WHERE v > 1 EXCEPT SELECT g FROM r WHERE v > 8",
    "counted": "SELECT g, count(DISTINCT v) AS d, min(v) AS lo FROM r GROUP BY g",
}


def batch(i: int, n: int = 40) -> list[tuple]:
    return [(i * n + j, (i + j) % 7, (i * j) % 11) for j in range(n)]


@pytest.fixture
def loaded(oracle):
    oracle.create_stream("r", R)
    oracle.insert("r", batch(0))
    oracle.run()
    for name, sql in QUERIES.items():
        oracle.register(name, sql)
    return oracle


def signed_nodes(db) -> list[int]:
    return [r[0] for r in db.conn.execute(
        "SELECT node_id FROM argus_catalog.nodes WHERE NOT insert_only ORDER BY node_id")]


def last_choices(db) -> dict[int, bool]:
    return dict(db.conn.execute(
        "SELECT node_id, rebuilt FROM argus_catalog.run_nodes WHERE rebuilt IS NOT NULL "
        "AND run_id = (SELECT max(run_id) FROM argus_catalog.runs)").fetchall())


@pytest.mark.parametrize("mode", ["apply", "rebuild"])
def test_forced_paths_match_the_oracle(loaded, mode):
    db = loaded.db
    db.configure(maintenance=mode)
    for i in range(1, 6):
        loaded.insert("r", batch(i))
        loaded.run()
        choices = last_choices(db)
        assert choices and set(choices.values()) == {mode == "rebuild"}
    timed = db.conn.execute(
        "SELECT count(*) FROM argus_catalog.run_nodes "
        "WHERE rebuilt IS NOT NULL AND flush_ms IS NOT NULL").fetchone()[0]
    assert timed > 0


STATS = ("SELECT node_id, {} FROM argus_catalog.nodes JOIN argus_catalog.node_stats "
         "USING (node_id) WHERE NOT insert_only")


def test_auto_follows_the_learned_costs(loaded):
    db = loaded.db
    nodes = signed_nodes(db)
    # rebuilding made to look far cheaper than applying: every changed node rebuilds
    db.conn.execute("UPDATE argus_catalog.node_stats SET apply_ms_row = 10, rebuild_ms_row = 1e-6 "
                    "WHERE node_id = ANY(%s)", (nodes,))
    loaded.insert("r", batch(1))
    loaded.run()
    choices = last_choices(db)
    assert set(choices) <= set(nodes) and choices and all(choices.values())
    # the other way round: every node applies its changes
    db.conn.execute("UPDATE argus_catalog.node_stats SET apply_ms_row = 1e-6, rebuild_ms_row = 10 "
                    "WHERE node_id = ANY(%s)", (nodes,))
    loaded.insert("r", batch(2))
    loaded.run()
    assert not any(last_choices(db).values())


def test_costs_are_learned_from_the_cycles(loaded):
    db = loaded.db
    initial = dict(db.conn.execute(
        STATS.format("rebuild_ms_row")))
    assert all(v is not None and v > 0 for v in initial.values()), \
        "registration estimates rebuilding from its backfill"
    db.configure(maintenance="apply")
    loaded.insert("r", batch(1))
    loaded.run()
    applied = dict(db.conn.execute(
        STATS.format("apply_ms_row")))
    changed = last_choices(db)
    assert all(applied[n] > 0 for n in changed)
    db.configure(maintenance="rebuild")
    loaded.insert("r", batch(2))
    loaded.run()
    rebuilt = dict(db.conn.execute(
        STATS.format("rebuild_ms_row")))
    assert any(rebuilt[n] != initial[n] for n in last_choices(db))


def test_explain_shows_the_choice(loaded):
    db = loaded.db
    db.configure(maintenance="rebuild")
    loaded.insert("r", batch(1))
    loaded.run()
    text = db.explain("having")
    assert "cheaper of applying its changes and rebuilding" in text
    assert "REBUILT" in text
    db.configure(maintenance="apply")
    loaded.insert("r", batch(2))
    loaded.run()
    assert "last cycle: applied" in db.explain("having")


def test_settings_are_checked(db):
    with pytest.raises(SettingError, match="unknown setting 'maintenace'"):
        db.configure(maintenace="rebuild")
    with pytest.raises(SettingError, match="cannot be 'sometimes'"):
        db.configure(maintenance="sometimes")
    with pytest.raises(SettingError, match="random_page_cost"):
        db.configure(random_page_cost=-1)
    assert db.settings()["maintenance"] == "auto"
    assert db.configure(random_page_cost=None)["random_page_cost"] is None
    # a lead past PostgreSQL's timestamps failed every cycle after it (found by a helper)
    for lead, why in (("300000 years", "294276 AD"), ("-1 day", "below nothing"),
                      ("banana", "invalid input syntax")):
        with pytest.raises(SettingError, match=why):
            db.configure(max_clock_lead=lead)
    assert db.configure(max_clock_lead="200000 years")["max_clock_lead"] == "200000 years"
    # every size in bytes takes PostgreSQL's units (truncate_inbox_bytes took whole bytes
    # only, where unread_inbox_bytes took "16MB"; a helper)
    assert db.configure(truncate_inbox_bytes="256kB", truncate_delta_bytes="4MB") \
        | {"truncate_inbox_bytes": 262144, "truncate_delta_bytes": 4194304} == db.settings()
    for bad in ("0.5", "\u0663", "524288TB"):  # (an Arabic-Indic 3; 16 times past bigint)
        with pytest.raises(SettingError, match="truncate_inbox_bytes"):
            db.configure(truncate_inbox_bytes=bad)
    db.run()


def test_having_is_views_of_the_groups_and_is_never_maintained(loaded):
    db = loaded.db
    (having,) = db.conn.execute(
        "SELECT n.node_id FROM argus_catalog.nodes n JOIN argus_catalog.edges e "
        "ON e.child_id = n.node_id JOIN argus_catalog.nodes p ON p.node_id = e.parent_id "
        "WHERE n.kind = 'select' AND p.kind = 'aggregate'").fetchone()
    for relation in (f"argus_net.n{having}", f"argus_net.n{having}_delta"):
        relkind = db.conn.execute("SELECT relkind FROM pg_class WHERE oid = %s::regclass",
                                  (relation,)).fetchone()[0]
        assert relkind == "v", relation
    for i in range(1, 4):
        loaded.insert("r", batch(i))
        loaded.run()  # the oracle checks every answer, "having" included
    assert having not in last_choices(db)
    assert db.conn.execute("SELECT flush_block FROM argus_catalog.nodes WHERE node_id = %s",
                           (having,)).fetchone()[0] is None
    assert "its history is a view: its parent's rows it passes" in db.explain("having")
