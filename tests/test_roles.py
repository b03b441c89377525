"""Roles and privileges (issue 18), as non-superuser LOGIN roles made by the tests see
them: each exploit fails with a clear error, and every role can do what it was granted
and nothing else."""

from __future__ import annotations

import os
import threading
import time

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import argus
from argus import ArgusError
from argus.errors import PermissionDeniedError, UnknownQueryError, UnknownStreamError
from argus.names import results_view

def denied(dsn: str, statement: str) -> str:
    """The error PostgreSQL gives the role for the statement (which must fail)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as exc:
            conn.execute(statement)
    return str(exc.value)


CATALOG_WRITES = [
    "UPDATE argus_catalog.nodes SET cycle_block = 'EXECUTE ''ALTER ROLE me SUPERUSER'''",
    "INSERT INTO argus_catalog.grants VALUES ('reader', current_user, 'b', NULL)",
    "UPDATE argus_catalog.settings SET role_prefix = 'x'",
    "UPDATE argus_catalog.program_state SET program_frame = 'ALTER ROLE me SUPERUSER', "
    "program_stale = true",
    "DELETE FROM argus_net.n1",
    "INSERT INTO argus_streams.t VALUES (2, 'forged')",
    "CREATE TABLE argus_net.mine (x int)",
    "SELECT argus.apply_privileges()",
    "SELECT argus.assemble_program()",
    "SELECT argus.isolate(1, 1, 'x', 'x')",
]


@pytest.mark.parametrize("kind", ["reader", "writer", "registrar"])
def test_no_granted_role_writes_the_catalog_or_the_network(network, login, kind):
    """Exploit 1: registering was writing node code into the catalog, which the owner's
    next cycle ran. No role argus grants may write the catalog, the network or the
    histories, nor call argus's own machinery."""
    role, dsn = login(kind)
    network.grant(kind, role)
    for statement in CATALOG_WRITES:
        assert "permission denied" in denied(dsn, statement)


def test_a_reader_of_one_query_reads_only_that_query(network, login):
    role, dsn = login("reader")
    network.grant("reader", role, query="a")
    with argus.connect(dsn) as reader:
        assert reader.results("a") == [(1, "x")]
        assert reader.new_results("a") == [(1, "x", 1)]
        with pytest.raises(UnknownQueryError, match="'b'"):
            reader.results("b")
    for table in ("argus_results.b", "argus_changes.b", "argus_streams.t", "argus_streams.s",
                  "argus_inbox.s", "argus_catalog.queries", "argus_catalog.nodes",
                  "argus_net.n1", "argus.queries"):
        assert "permission denied" in denied(dsn, f"SELECT * FROM {table}")
    network.revoke("reader", role, query="a")
    assert "permission denied" in denied(dsn, "SELECT * FROM argus_results.a")


def test_a_revoked_reader_is_refused_in_the_session_that_kept_its_reads_planned(network,
                                                                                 login):
    """A read keeps its plan for the session (reading._planned_once): the session that read
    an answer six times, its statements prepared, is refused once its grant goes."""
    role, dsn = login("reader")
    network.grant("reader", role, query="a")
    with argus.connect(dsn) as reader:
        for _ in range(6):
            assert reader.results("a") == [(1, "x")]
            assert reader.new_results("a") == [(1, "x", 1)]
        network.revoke("reader", role, query="a")
        for read in (reader.results, reader.new_results):
            with pytest.raises(ArgusError, match="'a'"):
                read("a")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # (the statement
            # argus prepared, past its own check of the grant)
            reader.conn.execute(sql.SQL("SELECT * FROM {}").format(results_view("a")),
                                prepare=True)


def test_a_reader_of_every_query_reads_answers_and_catalog_views_not_data(network, login):
    role, dsn = login("reader")
    network.grant("reader", role)
    with argus.connect(dsn) as reader:
        assert reader.results("b") == [(1, "classified")]
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM argus.queries").fetchone() == (2,)
    for table in ("argus_streams.t", "argus_inbox.t", "argus_catalog.queries", "argus_net.n1"):
        assert "permission denied" in denied(dsn, f"SELECT * FROM {table}")
    network.register_query("c", "SELECT v FROM s")  # a later query: readable too
    with argus.connect(dsn) as reader:
        assert reader.results("c") == [("x",)]


def test_a_writer_loads_its_stream_and_runs_cycles_and_nothing_else(network, login):
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    with argus.connect(dsn) as writer:
        assert writer.insert("s", [(2, "y")]) == 1
        assert writer.insert("s", [(3, "z")], load_id="batch-1") == 1
        assert writer.insert("s", [(3, "z")], load_id="batch-1") == 0  # exactly once
        report = writer.run()
        assert report.rows_in["s"] == 2
        with pytest.raises(UnknownStreamError):  # not one it may load
            writer.insert("t", [(9, "forged")])
        with pytest.raises(UnknownQueryError):
            writer.results("a")
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="stream t"):
            conn.execute("SELECT argus.claim_load('theirs', 't', 'copy')")
    assert "permission denied" in denied(dsn, "SELECT * FROM argus_inbox.s")
    assert "permission denied" in denied(dsn, "INSERT INTO argus_inbox.t VALUES (9, 'forged')")
    assert sorted(network.results("a")) == [(1, "x"), (2, "y"), (3, "z")]


def test_a_writers_cycle_names_no_query_it_may_not_read_for_a_replan(network, login):
    """argus.replan_triggered names the queries a cycle plans again, with what their
    joins wrote: a writer's cycle learnt the fan-out of queries it may not read (found
    by a helper). Now only those the session may read."""
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    network.configure(reoptimize_every=1000)
    (run,) = network.conn.execute("SELECT max(run_id) FROM argus_catalog.runs").fetchone()
    network.conn.execute(  # (a decision that waited, due again now: the trigger names it)
        "INSERT INTO argus_catalog.migrations (query, after_run, strategy, migrated, why, "
        "waited, recheck_at) VALUES ('a', %s, 'moving-state', false, 'not yet', true, %s)",
        (run, run))
    due = "SELECT argus.replan_triggered(%s)"
    assert network.conn.execute(due, (run,)).fetchone()[0] == {"a": [None, None]}
    with psycopg.connect(dsn, autocommit=True) as writer:
        assert writer.execute(due, (run,)).fetchone()[0] is None


def test_a_registrar_registers_over_streams_it_may_read(network, login, worker):
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    with argus.connect(dsn) as registrar:
        info = registrar.register_query("mine", "SELECT id FROM s WHERE v = 'x'")
        assert info.columns == [("id", "integer")]
        assert registrar.results("mine") == [(1,)]
        with pytest.raises(PermissionDeniedError, match="may not read stream 't'"):
            registrar.register_query("spy", "SELECT secret FROM t")
        with pytest.raises(PermissionDeniedError, match="created by role"):
            registrar.unregister_query("a")
        registrar.create_stream("own", {"id": "int", "label": "text", "at": "date"})
        own = next(s for s in registrar.streams() if s.name == "own")
        assert [c for c, _ in own.columns] == ["id", "label", "at"]
        registrar.insert("own", [(5, "x", None)])  # in the order declared (not jsonb's)
        registrar.register_query("own_q", "SELECT id FROM own")
        registrar.run()
        assert registrar.results("own_q") == [(5,)]
        registrar.unregister_query("own_q")
        registrar.unregister_query("mine")
        registrar.drop_stream("own")
    assert [q.name for q in network.queries()] == ["a", "b"]
    assert "permission denied" in denied(dsn, "UPDATE argus_catalog.requests SET status = 'done'")


def test_a_registrar_whose_stream_is_taken_back_reads_its_queries_over_it_no_more(
        network, login, worker):
    """Left by a helper's attack: the registrar's own query went on showing the stream
    its reading was revoked from. Its queries over other streams stay readable."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    for stream in ("s", "t"):
        network.grant("reader", role, stream=stream)
    with argus.connect(dsn) as registrar:
        registrar.register_query("mine", "SELECT id FROM s WHERE v = 'x'")
        registrar.register_query("theirs", "SELECT id FROM t")
        assert registrar.results("mine") == [(1,)]
    network.revoke("reader", role, stream="s")
    with argus.connect(dsn) as registrar:
        with pytest.raises(ArgusError, match="'mine'"):
            registrar.results("mine")
        assert registrar.results("theirs") == [(1,)]
    for view in ("argus_results.mine", "argus_changes.mine"):
        assert "permission denied" in denied(dsn, f"SELECT * FROM {view}")
    network.grant("reader", role, query="mine")  # the owner may give it back by name
    with argus.connect(dsn) as registrar:
        assert registrar.results("mine") == [(1,)]


def test_a_revoked_reader_of_a_query_reads_its_subscription_log_no_more(network, login):
    role, dsn = login("reader")
    network.grant("reader", role, query="a")
    with argus.connect(dsn) as reader:
        changes = reader.subscribe("a", "app", timeout=0)
        next(changes)  # (the answer: the log is made)
        changes.close()
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) >= 0 FROM argus_log.a").fetchone() == (True,)
    network.revoke("reader", role, query="a")
    assert "permission denied" in denied(dsn, "SELECT * FROM argus_log.a")


def test_a_registrars_flood_of_requests_holds_back_no_other_nor_the_cycle(network, login):
    """One registrar's requests filled the queue without bound and `argus run` carried
    them out before its cycle for as long as they came (found by a helper): a role may
    have 100 waiting; each role's are taken in turn; a call may stop starting them
    after a time (argus run: REQUEST_SECONDS), the rest waiting for the next."""
    (flood, flood_dsn), (other, other_dsn) = login("flood"), login("other")
    for role in (flood, other):
        network.grant("registrar", role)
    queued = ("INSERT INTO argus_catalog.requests (kind, name, body) "  # (quick: no such
              "VALUES ('unregister', %s, '{}')")  # query, each fails at once)
    with psycopg.connect(flood_dsn, autocommit=True) as conn:
        for i in range(100):
            conn.execute(queued, (f"f{i}",))
        with pytest.raises(psycopg.errors.ProgramLimitExceeded, match="100 requests waiting"):
            conn.execute(queued, ("f100",))
    with psycopg.connect(other_dsn, autocommit=True) as conn:
        conn.execute(queued, ("o0",))
    assert network.process_requests(seconds=0) == []
    done = network.process_requests(seconds=60)
    assert [o.name for o in done[:3]] == ["f0", "o0", "f1"], done[:3]
    assert len(done) == 101 and all("unknown query" in o.error for o in done), done[0]


def test_two_sessions_racing_queue_at_most_100_requests_of_a_role(network, login):
    """The count saw committed requests only: two sessions of one role, each in an open
    transaction, queued 100 each (a helper). A role's requests now queue one at a time."""
    role, dsn = login("racer")
    network.grant("registrar", role)
    queued = "INSERT INTO argus_catalog.requests (kind, name, body) VALUES ('unregister', %s, '{}')"
    outcome: list[object] = []

    def second() -> None:
        with psycopg.connect(dsn) as conn:
            try:
                for i in range(60):
                    conn.execute(queued, (f"b{i}",))
                conn.commit()
            except psycopg.errors.ProgramLimitExceeded as exc:
                outcome.append(exc)

    with psycopg.connect(dsn) as first:
        for i in range(60):
            first.execute(queued, (f"a{i}",))
        racer = threading.Thread(target=second)
        racer.start()
        racer.join(1)
        assert racer.is_alive()  # waiting for the first session's requests
        first.commit()
    racer.join(30)
    assert len(outcome) == 1 and "100 requests waiting" in str(outcome[0])
    (pending,) = network.conn.execute(
        "SELECT count(*) FROM argus_catalog.requests WHERE status = 'pending'").fetchone()
    assert pending == 60


def test_a_request_made_as_argus_group_role_is_refused(network, login, worker):
    """Every registrar may SET ROLE to argus's registrar group: its requests were
    carried out as the group's (a second identity with its own 100 requests, and
    streams every registrar could then write; a helper). They are refused, saying why."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    (group,) = network.conn.execute(
        "SELECT rolname FROM pg_roles WHERE rolname LIKE %s",
        (network.conn.execute("SELECT role_prefix FROM argus_catalog.settings")
         .fetchone()[0] + "\\_registrar",)).fetchone()
    with argus.connect(dsn) as registrar:
        registrar.conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(group)))
        with pytest.raises(PermissionDeniedError, match="argus's own group roles"):
            registrar.create_stream("theirs", {"x": "int"})
    assert "theirs" not in [s.name for s in network.streams()]


def test_a_writer_cannot_keep_a_cycles_transaction_open_for_long(network, login):
    """Writers run cycles: one that kept the cycle's transaction open held the cycle
    lock, and after a large inbox's claim every inbox, for as long as it liked (a
    helper). Its session now ends once idle in that transaction for a minute."""
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    with psycopg.connect(dsn) as writer:  # (not autocommit: the cycle's transaction stays)
        writer.execute("SELECT argus.run_cycle()")
        assert writer.execute("SHOW idle_in_transaction_session_timeout").fetchone() \
            == ("1min",)
        writer.rollback()
        assert writer.execute("SHOW idle_in_transaction_session_timeout").fetchone() \
            == ("0",)


def test_a_request_is_refused_past_node_timeout_in_all(fresh_dsn):
    """A request's statements each under the time limit held the cycle lock for as
    many times the limit (a helper: six backfills of 4 s under a 6 s node_timeout):
    its block is cancelled once the limit has passed since it began, and says so; a
    block within it runs on, and the session after it too."""
    from argus.requests import _at_most

    with psycopg.connect(fresh_dsn) as conn:
        with _at_most(conn, 0.5, "register slow"):
            conn.execute("SELECT pg_sleep(0.1)")
        conn.execute("SELECT pg_sleep(0.6)")  # (after it: never cancelled)
        with pytest.raises(ArgusError, match=r"register slow: .*node_timeout \(0.5 s\), in all"):
            with _at_most(conn, 0.5, "register slow"):
                for _ in range(4):
                    conn.execute("SELECT pg_sleep(0.3)")
        conn.rollback()
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_requests_planning_is_bounded_by_node_timeout_too(network, login):
    """A registrar's UNION ALL of IN lists planned for a minute under a 5 s node_timeout,
    holding the cycle lock (a helper): the limit was read as seconds from milliseconds
    (5,000 s), and no cancel reached its planning in Python, between its statements. No
    statement of a request starts once node_timeout has passed since it began."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    network.configure(node_timeout="1s")
    query = " UNION ALL ".join(
        f"SELECT id FROM s WHERE id IN ({', '.join(str(b * 100000 + i) for i in range(1000))})"
        for b in range(20))
    with psycopg.connect(dsn, autocommit=True) as registrar:
        registrar.execute("SELECT argus.register('big', %s)", (query,))
    started = time.monotonic()
    (outcome,) = network.process_requests()
    assert time.monotonic() - started < 15  # (44 s before)
    assert outcome.status == "failed" and "node_timeout (1 s), in all" in outcome.error


def test_cycles_run_between_a_registrars_slow_requests(network, login):
    """A registrar's queued requests, each computing up to node_timeout, held the cycle
    lock back to back: every cycle run without waiting (`argus run` from cron) was
    skipped until the last was done (a helper: 6 of 6 s, 36 cycles skipped; 100 of 10
    minutes by default). The owner's worker leaves the lock free after such a request
    for as long as it held it."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    network.conn.execute("CREATE FUNCTION public.slow_true(i int) RETURNS boolean IMMUTABLE "
                         "LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.4); RETURN true; "
                         "END $$")
    network.conn.commit()
    network.configure(virtual_selectivity=None)  # (a table, filled at registration)
    network.insert("s", [(2, "y"), (3, "z")])
    network.run()
    with psycopg.connect(dsn, autocommit=True) as registrar:
        for k in range(2):
            registrar.execute("SELECT argus.register(%s, %s)", (
                f"slow{k}", f"SELECT id, {k} AS k FROM s WHERE public.slow_true(id)"))
    outcomes = []

    def owners_worker() -> None:
        with argus.connect(network.dsn) as owner:
            outcomes.extend(owner.process_requests(pause=True))

    thread = threading.Thread(target=owners_worker)
    ran, started = 0, time.monotonic()
    thread.start()
    with argus.connect(network.dsn) as cron:
        while thread.is_alive():
            try:
                cron.run(wait=False)
                ran += 1
            except argus.CycleInProgressError:
                pass
            time.sleep(0.1)
    thread.join()
    assert [o.status for o in outcomes] == ["done", "done"]
    assert ran >= 2, (ran, time.monotonic() - started)


def test_registration_refuses_reading_functions_by_name(network, login, worker):
    """Exploit 2: `table_to_xml` is STABLE and read any table into an answer."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    with argus.connect(dsn) as registrar:
        with pytest.raises(ArgusError, match=r"table_to_xml\(\)"):
            registrar.register_query(
                "leak", "SELECT left(table_to_xml('argus_streams.t'::regclass, true, false, "
                "'')::text, 120) AS k, count(*) FROM s GROUP BY 1")


def test_a_registrar_calls_only_functions_it_may_execute(network, login, worker, fresh_dsn):
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    with psycopg.connect(fresh_dsn, autocommit=True) as admin:
        admin.execute("CREATE FUNCTION public.private_double(int) RETURNS int IMMUTABLE "
                      "LANGUAGE sql AS $$ SELECT 2 * $1 $$")
        admin.execute("REVOKE EXECUTE ON FUNCTION public.private_double(int) FROM PUBLIC")
    with argus.connect(dsn) as registrar:
        with pytest.raises(PermissionDeniedError, match="private_double"):
            registrar.register_query("d", "SELECT private_double(id) AS d FROM s")


def test_a_role_without_grants_is_told_so(network, login):
    _, dsn = login("nobody")
    with pytest.raises(PermissionDeniedError, match="no argus privileges"):
        argus.connect(dsn)


def test_roles_of_one_database_have_nothing_in_another(admin_dsn, network, login):
    role, dsn = login("writer")
    network.grant("writer", role)
    name = f"argus_roles_other_{os.getpid()}"
    argus.roles.drop_database(admin_dsn, name)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        argus.connect(make_conninfo(admin_dsn, dbname=name)).close()
        with pytest.raises(PermissionDeniedError, match="no argus privileges"):
            argus.connect(make_conninfo(dsn, dbname=name))
    finally:
        with psycopg.connect(make_conninfo(admin_dsn, dbname=name), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        argus.roles.drop_database(admin_dsn, name)


# -- the grants of every argus object, as the catalog says them --------------------------

def test_every_definer_function_pins_its_search_path_and_public_runs_nothing(db):
    rows = db.conn.execute(
        """SELECT p.oid::regprocedure::text, p.prosecdef, p.proconfig, p.proacl::text[],
                  pg_get_userbyid(p.proowner)
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname IN ('argus', 'argus_net')""").fetchall()
    owner = argus.roles.owner_role(db.conn)
    assert len(rows) > 10
    for name, definer, config, acl, proowner in rows:
        assert proowner == owner, name
        if definer:
            assert any(c.startswith("search_path=pg_catalog") for c in config or []), name
        # an ACL entry "=X/owner" is PUBLIC's EXECUTE; NULL is the default, which is PUBLIC's
        assert acl is not None and not any(a.startswith("=") for a in acl), name


def test_privilege_matrix(network, login):
    """Role × object × action, from PostgreSQL's own privilege functions: only the
    owner writes anything but inboxes and requests."""
    role_of = {}
    for kind in ("reader", "writer", "registrar"):
        role_of[kind], _ = login(kind)
        network.grant(kind, role_of[kind])
    rows = network.conn.execute(
        """SELECT n.nspname, c.relname, r.role,
                  has_any_column_privilege(r.role, c.oid, 'SELECT'),
                  has_any_column_privilege(r.role, c.oid, 'INSERT'),
                  has_any_column_privilege(r.role, c.oid, 'UPDATE')
                  OR has_table_privilege(r.role, c.oid, 'DELETE, TRUNCATE')
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
                  unnest(%s::text[]) AS r(role)
            WHERE n.nspname LIKE 'argus%%' AND c.relkind IN ('r', 'v', 'p')""",
        (list(role_of.values()),)).fetchall()
    kind_of = {v: k for k, v in role_of.items()}
    matrix = {}
    for schema, table, role, select, insert, change in rows:
        kind = kind_of[role]
        assert not change, (kind, schema, table)
        matrix[(kind, schema, table)] = (select, insert)
        if insert:
            assert (kind, schema) in {("writer", "argus_inbox"), ("registrar", "argus_catalog")}, \
                (kind, schema, table)
            assert schema != "argus_catalog" or table == "requests"
        if select:
            assert (kind, schema) in {
                ("reader", "argus_results"), ("reader", "argus_changes"), ("reader", "argus"),
                ("reader", "argus_catalog"), ("writer", "argus_catalog"),
                ("registrar", "argus_catalog")}, (kind, schema, table)
            assert schema != "argus_catalog" or table in ("clock", "requests"), (kind, table)
    assert matrix[("reader", "argus_results", "a")] == (True, False)
    assert matrix[("writer", "argus_inbox", "s")] == (False, True)
    assert matrix[("registrar", "argus_catalog", "requests")] == (True, True)
    assert matrix[("writer", "argus_streams", "s")] == (False, False)
    listed = {(role, kind) for role, kind, _ in network.privileges()}
    assert {(role, kind) for kind, role in role_of.items()} <= listed


def test_grant_and_revoke_from_the_command_line(network, login, fresh_dsn):
    from click.testing import CliRunner

    from argus.cli import main

    role, dsn = login("reader")
    out = CliRunner().invoke(main, ["grant", "reader", role, "--query", "A", "--dsn", fresh_dsn])
    assert out.exit_code == 0, out.output
    assert (role, "reader", "query a") in network.privileges()
    with argus.connect(dsn) as reader:
        assert reader.results("a") == [(1, "x")]
    out = CliRunner().invoke(main, ["revoke", "reader", role, "--query", "A", "--dsn", fresh_dsn])
    assert out.exit_code == 0, out.output
    assert (role, "reader", "query a") not in network.privileges()
    assert "permission denied" in denied(dsn, "SELECT * FROM argus_results.a")
    out = CliRunner().invoke(main, ["grant", "reader", "no_such_role_anywhere", "--dsn", fresh_dsn])
    assert out.exit_code == 1 and "unknown role 'no_such_role_anywhere'" in out.output


def test_a_registrar_reaches_no_stream_through_recursion_or_lateral(network, login, worker):
    """The streams a WITH RECURSIVE step or a LATERAL subquery reads are checked like any
    other: a registrar granted `s` alone cannot read `t` through them."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    with argus.connect(dsn) as registrar:
        for name, query in [
                ("walk", "WITH RECURSIVE r(i) AS (SELECT id FROM s UNION SELECT t.id FROM r "
                         "JOIN t ON t.id = r.i) SELECT i FROM r"),
                ("peek", "SELECT s.id, x.secret FROM s CROSS JOIN LATERAL "
                         "(SELECT t.secret FROM t WHERE t.id = s.id) x")]:
            with pytest.raises(PermissionDeniedError, match="may not read stream 't'"):
                registrar.register_query(name, query)
        registrar.register_query("walk_s", "WITH RECURSIVE r(i) AS (SELECT id FROM s UNION "
                                            "SELECT s.id FROM r JOIN s ON s.id = r.i + 1) "
                                            "SELECT i FROM r")
        assert registrar.results("walk_s") == [(1,)]
        registrar.unregister_query("walk_s")


def test_a_writer_runs_cycles_with_kept_plans_and_their_reset(network, login, caplog):
    """Cycles a writer runs one after another keep plans for small deltas and drop them
    when a history doubled (DISCARD PLANS, session settings): all of it as a role with
    no privilege but the writer's, and the answers stay exact. Its cycles leave the
    VACUUM of the owner's deltas to the owner, and say nothing of it (they warned that
    it failed; a helper)."""
    network.register_query("j", "SELECT s.id, t.secret FROM s JOIN t ON s.id = t.id")
    network.insert("t", [(i, f"t{i}") for i in range(2, 3000)])
    network.run()
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    reset_before = network.conn.execute(
        "SELECT plans_reset_run FROM argus_catalog.program_state").fetchone()[0]
    with argus.connect(dsn) as writer:
        for start in range(2, 2802, 400):
            writer.insert("s", [(i, f"s{i}") for i in range(start, start + 400)])
            writer.run()
    assert network.conn.execute(
        "SELECT plans_reset_run FROM argus_catalog.program_state").fetchone()[0] > reset_before
    expected = network.conn.execute(
        "SELECT s.id, t.secret FROM argus_streams.s s JOIN argus_streams.t t "
        "ON s.id = t.id").fetchall()
    assert len(expected) == 2801 and sorted(network.results("j")) == sorted(expected)
    assert not [r for r in caplog.records if "VACUUM" in r.getMessage()]


def test_a_role_with_nothing_cannot_hold_a_registrars_requests(network, login):
    """A role's requests queued one session at a time by an advisory lock keyed by its
    name: any role that could connect took it, and the registrar's requests waited for
    as long as its session lived (a helper). The turn is a row of argus's now."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    nobody, nobody_dsn = login("nothing")
    with psycopg.connect(nobody_dsn, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(x'41525251'::int, hashtext(%s))", (role,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            holder.execute("SELECT argus.request_turn()")
        with psycopg.connect(dsn, autocommit=True) as registrar:
            registrar.execute("SET lock_timeout = '2s'")
            registrar.execute("INSERT INTO argus_catalog.requests (kind, name, body) "
                              "VALUES ('unregister', 'x', '{}')")
    (pending,) = network.conn.execute(
        "SELECT count(*) FROM argus_catalog.requests WHERE status = 'pending'").fetchone()
    assert pending == 1


def test_a_reader_running_a_cycle_is_told_it_may_not(network, login):
    """`argus run` as a reader: a clear refusal naming what to grant, not a traceback
    of the function it may not call (a helper)."""
    role, dsn = login("reader")
    network.grant("reader", role)
    with argus.connect(dsn) as reader, pytest.raises(PermissionDeniedError,
                                                     match="grant writer"):
        reader.run()
