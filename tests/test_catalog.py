"""The versioned catalog and the views psql users read."""

from __future__ import annotations

import doctest
import json

import psycopg
import pytest
from psycopg.types.json import Jsonb

import argus
from argus.frontend import analyze
from argus.mqo.sharing import Sharing
from argus import catalog, dashboard, names, network, nodes, schedule, streams


def test_migrate_is_idempotent_and_versioned(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        assert catalog.installed_version(conn) == catalog.latest_version()
        assert catalog.migrate(conn) == 0


def test_a_newer_catalog_is_refused(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO argus_catalog.schema_version VALUES (999)")
    with pytest.raises(argus.CatalogError, match="newer than this argus"):
        argus.connect(fresh_dsn)


def test_a_catalog_from_before_the_squashed_schema_is_refused_and_left_alone(fresh_dsn):
    """catalog/schema.sql is version 37: an older catalog (made before argus's first
    release) cannot be upgraded, and says what to do instead of failing half-way."""
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM argus_catalog.schema_version")
        conn.execute("INSERT INTO argus_catalog.schema_version VALUES (12)")
    with pytest.raises(argus.CatalogError, match="version 12.*install argus again"):
        argus.connect(fresh_dsn)
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        assert catalog.installed_version(conn) == 12


def test_version_38_moves_argus_own_state_out_of_the_settings(fresh_dsn):
    """A catalog of version 37 kept argus's own state (its code's versions, the program's
    frame, when kept plans were last reset) in the user's settings row: version 38 moves
    it to argus_catalog.program_state, values and all."""
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        conn.execute("""
            ALTER TABLE argus_catalog.settings ADD COLUMN code_version int NOT NULL DEFAULT 0,
                ADD COLUMN catalog_code text, ADD COLUMN program_frame text,
                ADD COLUMN program_stale boolean NOT NULL DEFAULT true,
                ADD COLUMN plans_reset_run bigint NOT NULL DEFAULT 0;
            UPDATE argus_catalog.settings s SET code_version = p.code_version,
                   catalog_code = 'an older argus', program_frame = p.program_frame,
                   program_stale = false, plans_reset_run = 42
              FROM argus_catalog.program_state p;
            DROP TABLE argus_catalog.program_state;
            ALTER TABLE argus_catalog.migrations DROP COLUMN plan_ms;  -- (version 39)
            ALTER TABLE argus_catalog.migrations DROP COLUMN recheck_at, DROP COLUMN waited;
            ALTER TABLE argus_catalog.queries DROP COLUMN changes_after;  -- (40)
            ALTER TABLE argus_catalog.migrations DROP COLUMN unchanged_since;  -- (41)
            ALTER TABLE argus_catalog.consumers DROP COLUMN created_by;  -- (42)
            DROP INDEX argus_catalog.requests_requested_by_request_id_idx;  -- (43)
            DROP INDEX argus_catalog.requests_requested_by_done_at_idx;
            ALTER TABLE argus_catalog.quarantine DROP COLUMN row_text CASCADE,  -- (44)
                ALTER COLUMN row SET NOT NULL;
            DROP TABLE argus_catalog.cycle_lock, argus_catalog.pinned_settings,
                argus_catalog.request_turns;  -- (45, 46, 48)
            ALTER TABLE argus_catalog.tracked DROP COLUMN filenode, DROP COLUMN rewritten_at,
                DROP COLUMN stopped, DROP COLUMN attnums;  -- (47)
            UPDATE argus_catalog.nodes SET definition = definition || layout;  -- (49)
            ALTER TABLE argus_catalog.nodes DROP COLUMN layout CASCADE;
            ALTER TABLE argus_catalog.nodes DROP COLUMN private_to, DROP COLUMN findable;
            CREATE UNIQUE INDEX nodes_signature ON argus_catalog.nodes (md5(signature));  -- (50)
            DELETE FROM argus_catalog.schema_version WHERE version > 37""")
    with argus.connect(fresh_dsn) as again:
        conn = again.conn
        assert catalog.installed_version(conn) == catalog.latest_version()
        assert conn.execute("SELECT count(*), max(plans_reset_run), max(catalog_code), "
                            "bool_and(program_stale) FROM argus_catalog.program_state"
                            ).fetchone() == (1, 42, catalog.code()[0], True)
        assert not conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'argus_catalog.settings'"
            "::regclass AND attname IN ('code_version', 'catalog_code', 'program_frame', "
            "'program_stale', 'plans_reset_run') AND NOT attisdropped").fetchall()
        again.run()


def test_a_new_database_gets_the_squashed_schema_and_its_settings(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        versions = [v for (v,) in conn.execute(
            "SELECT version FROM argus_catalog.schema_version ORDER BY version")]
        assert versions[0] == catalog.SQUASHED and versions[-1] == catalog.latest_version()
        zone, durability = conn.execute(
            "SELECT time_zone, durability FROM argus_catalog.settings").fetchone()
        assert zone and durability == "derived"


def test_a_new_database_has_every_setting_at_the_default_python_gives(fresh_dsn):
    """The settings' defaults are defined once, in argus.settings.SETTINGS; the catalog's
    column defaults are generated from them (catalog.generated)."""
    from psycopg import sql

    from argus.settings import INSTALLER, SETTINGS

    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        types = dict(conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'argus_catalog.settings'::regclass AND attnum > 0"))
        for name, setting in SETTINGS.items():
            if setting.default is INSTALLER:
                continue
            (same,) = conn.execute(sql.SQL(
                "SELECT {} IS NOT DISTINCT FROM CAST({} AS {}) FROM argus_catalog.settings"
            ).format(sql.Identifier(name), sql.Literal(setting.default),
                     sql.SQL(types[name]))).fetchone()
            assert same, name


def test_functions_changed_by_a_newer_argus_are_reapplied_by_the_owner_role(db, fresh_dsn):
    """An upgrade re-applies catalog/functions.sql as argus's owner role, which may not
    create in schema public (PostgreSQL 15) nor replace the argus_now() its installer
    made there: the upgrade must not need to."""
    db.conn.execute("UPDATE argus_catalog.program_state SET catalog_code = 'an older argus'")
    with argus.connect(fresh_dsn) as again:
        assert catalog.installed_code(again.conn) == catalog.code()[0]
        assert again.conn.execute("SELECT public.argus_now() IS NOT DISTINCT FROM "
                                  "argus.clock_now()").fetchone() == (True,)
        again.run()


def test_node_code_compiled_by_an_older_argus_is_recompiled(transfers, fresh_dsn):
    """A database whose stored node code predates this argus (an upgrade) gets it
    recompiled, and its program reassembled, when argus connects."""
    db = transfers.db
    transfers.register("big", "SELECT sender, count(*) AS n FROM transfers GROUP BY sender "
                              "HAVING count(*) > 1")
    db.conn.execute("UPDATE argus_catalog.nodes SET flush_block = '    NULL;' "
                    "WHERE NOT insert_only")  # stale code: maintains nothing
    db.conn.execute("UPDATE argus_catalog.program_state SET code_version = 0")
    with argus.connect(fresh_dsn) as again:
        assert again.conn.execute("SELECT code_version FROM argus_catalog.program_state"
                                  ).fetchone()[0] == network.CODE_VERSION
        assert again.conn.execute("SELECT count(*) FROM argus_catalog.nodes "
                                  "WHERE flush_block = '    NULL;'").fetchone()[0] == 0
    rows = [(i, "2024-01-01", f"a{i % 3}", "b", 10) for i in range(12)]
    for batch in (rows[:6], rows[6:]):
        transfers.insert("transfers", batch)
        transfers.run()  # the oracle checks the recompiled maintenance


def test_version_49_keeps_a_nodes_layout_apart_from_its_definition(transfers, fresh_dsn):
    """Up to version 48 how a node keeps its rows (a view or a table, its indexes, what
    its parent's growth lets an aggregate skip) was in its definition, which its
    signature read less a list of those keys: version 49 moves them to
    argus_catalog.nodes.layout, and the network maintains its queries as before."""
    db = transfers.db
    rows = [(i, "2024-01-01", f"a{i % 3}", f"a{i % 4}", 10 * i) for i in range(40)]
    transfers.insert("transfers", rows[:20])
    transfers.run()
    transfers.register("lows", "SELECT sender, min(amount) AS lo, count(*) AS n "
                               "FROM transfers GROUP BY sender")
    transfers.register("pairs", "SELECT a.tran_id, b.tran_id AS next FROM transfers a "
                                "JOIN transfers b ON b.sender = a.receiver")
    layouts = dict(db.conn.execute("SELECT node_id, layout FROM argus_catalog.nodes"))
    assert {"grows", "virtual", "deferred"} <= {k for layout in layouts.values() for k in layout}
    db.conn.execute("UPDATE argus_catalog.nodes SET definition = definition || layout")
    db.conn.execute("ALTER TABLE argus_catalog.nodes DROP COLUMN layout CASCADE")
    _before_version_50(db.conn)
    db.conn.execute("DELETE FROM argus_catalog.schema_version WHERE version >= 49")
    with argus.connect(fresh_dsn) as again:
        assert dict(again.conn.execute("SELECT node_id, layout FROM argus_catalog.nodes")
                    ) == layouts
        assert again.conn.execute("SELECT count(*) FROM argus_catalog.nodes "
                                  "WHERE definition ?| %s", (sorted(nodes.LAYOUT),)
                                  ).fetchone() == (0,)
    transfers.insert("transfers", rows[20:])
    transfers.run()  # the oracle checks both queries


def _before_version_50(conn) -> None:
    """The catalog as versions up to 49 kept who finds a node: in its signature, a fifth
    element (the one query a private node is for; the node an equal one was made beside,
    which kept the plain signature)."""
    rows = conn.execute("SELECT node_id, signature, private_to, findable "
                        "FROM argus_catalog.nodes WHERE kind <> 'stream'").fetchall()
    conn.execute("ALTER TABLE argus_catalog.nodes DROP COLUMN private_to, DROP COLUMN findable")
    hidden = {(text, private_to): node_id for node_id, text, private_to, found in rows
              if not found}
    for node_id, text, private_to, found in rows:
        salt = private_to
        if found and (text, private_to) in hidden:
            salt = f"{private_to} beside isolated node {hidden[text, private_to]}"
        if salt is not None:
            conn.execute("UPDATE argus_catalog.nodes SET signature = %s WHERE node_id = %s",
                         (text[:-1] + ", " + json.dumps(salt) + "]", node_id))
    conn.execute("CREATE UNIQUE INDEX nodes_signature ON argus_catalog.nodes (md5(signature))")


def test_version_50_says_who_finds_a_node_apart_from_its_signature(oracle, fresh_dsn):
    """Up to version 49 a node not to be shared (a query's without sharing; one made
    beside an equal node isolated, or earlier in the same registration) was told apart
    by a salt in its signature: version 50 takes it off into nodes.private_to and
    nodes.findable, and the network maintains its queries and shares its nodes as
    before."""
    db = oracle.db
    oracle.create_stream("s", {"k": "int", "x": "int"})
    shared, db.sharing = db.sharing, Sharing.of("none")
    oracle.register("own", "SELECT k, sum(x) AS total FROM s GROUP BY k")
    db.sharing = shared
    pair = ("SELECT a.k, b.k AS k2, a.x, b.x AS x2 FROM s a JOIN s b ON a.k = b.k "
            "WHERE a.x > 1 AND b.x > 1")  # (a self-join: two equal selections)
    oracle.register("pair", pair)
    oracle.insert("s", [(i % 5, i) for i in range(20)])
    oracle.run()
    finders = db.conn.execute("SELECT node_id, signature, private_to, findable "
                              "FROM argus_catalog.nodes ORDER BY node_id").fetchall()
    assert {p for _, _, p, _ in finders} == {None, "own"}
    assert not all(f for *_, f in finders), finders  # (the first of the equal selections)
    _before_version_50(db.conn)
    db.conn.execute("DELETE FROM argus_catalog.schema_version WHERE version >= 50")
    db.conn.commit()
    with argus.connect(fresh_dsn) as again:
        assert again.conn.execute("SELECT node_id, signature, private_to, findable "
                                  "FROM argus_catalog.nodes ORDER BY node_id"
                                  ).fetchall() == finders
    oracle.register("same", pair)  # shares pair's nodes: no new node
    assert db.conn.execute("SELECT max(node_id) FROM argus_catalog.nodes").fetchone()[0] \
        == max(n for n, *_ in finders)
    oracle.insert("s", [(i % 7, i) for i in range(30)])
    oracle.run()  # the oracle checks all three


def test_catalog_views_exist_for_psql_users(db):
    for view in ("queries", "nodes", "runs", "streams"):
        db.conn.execute(f"SELECT * FROM argus.{view}").fetchall()  # noqa: S608 - constants


@pytest.mark.parametrize("module", [analyze, catalog, dashboard, names, schedule, streams])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0


def test_a_network_change_leaves_the_program_to_the_next_cycle(transfers):
    """Registering compiles only the new query's code; the next cycle, even one started
    from SQL (psql, pg_cron), assembles the program with it."""
    conn = transfers.db.conn

    def program() -> tuple[bool, str]:
        return conn.execute(
            "SELECT s.program_stale, p.prosrc FROM argus_catalog.program_state s, pg_proc p "
            "WHERE p.oid = 'argus_net.cycle_program(bigint, jsonb, argus_catalog.settings)'"
            "::regprocedure").fetchone()

    transfers.register("small", "SELECT tran_id FROM transfers WHERE amount < 100")
    transfers.run()
    assert program()[0] is False
    info = transfers.register("large", "SELECT tran_id, sender FROM transfers "
                                       "WHERE amount > 1000")
    stale, code = program()
    assert stale and f"argus_written[{info.output_node}]" not in code
    transfers.insert("transfers", [(i, "2024-01-02", "a", "b", 50 * i) for i in range(40)])
    transfers.run(lambda: conn.execute("SELECT argus.run_cycle()"))
    stale, code = program()
    assert not stale and f"argus_written[{info.output_node}]" in code


def test_a_cycle_pins_what_python_pins(db):
    """argus.run_cycle's SET clauses (catalog/functions.sql) are settings.PINNED: a cycle
    run from psql or pg_cron evaluates with the styles registrations do."""
    from argus.settings import PINNED

    (config,) = db.conn.execute("SELECT proconfig FROM pg_proc WHERE oid = "
                                "'argus.run_cycle(boolean)'::regprocedure").fetchone()
    pinned = dict(c.split("=", 1) for c in config)
    assert {k.lower(): v for k, v in PINNED.items()} == {
        k.lower(): v for k, v in pinned.items() if k.lower() in map(str.lower, PINNED)}
    # the installer's values (catalog 46) are the ones Python pins, and the cycle gives
    # the caller's back on exit (a SET clause of each)
    from argus.settings import PINNED_FROM_INSTALL

    names = {n for (n,) in db.conn.execute("SELECT name FROM argus_catalog.pinned_settings")}
    assert names == set(PINNED_FROM_INSTALL) <= set(map(str.lower, pinned))


def test_the_program_is_filled_by_its_slots_names(db):
    """argus.fill_program fills the frame's slots by the names argus.abi.SLOTS gives
    them, in one pass (a node's code holding a placeholder is not read again); a slot
    missing or unknown is an error that names them."""
    from argus.abi import SLOTS

    frame = " | ".join(f"%{i}$s" for i in range(1, len(SLOTS) + 1))
    slots = {name: f"<{name} %2$s>" for name in SLOTS}
    (filled,) = db.conn.execute("SELECT argus.fill_program(%s, %s)",
                                (frame, Jsonb(slots))).fetchone()
    assert filled == " | ".join(slots.values())
    for wrong in ({k: v for k, v in slots.items() if k != "flush"}, {**slots, "flushes": ""}):
        with pytest.raises(psycopg.errors.RaiseException, match="clock_outputs"):
            db.conn.execute("SELECT argus.fill_program(%s, %s)", (frame, Jsonb(wrong)))
