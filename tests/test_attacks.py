"""Issue 48: a registrar, a writer or a login role with nothing tries what an attacker
would. Each test is one hole; each failed before its fix."""

from __future__ import annotations

import time

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import argus
from argus import ArgusError

# A registrar's own code, in a schema it owns: each function logs who ran it.
EVIL = """
CREATE TABLE evil.calls (who text, what text);
GRANT INSERT, SELECT ON evil.calls TO PUBLIC;
CREATE FUNCTION evil.f(int) RETURNS int VOLATILE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'f'); RETURN $1; END $$;
CREATE FUNCTION evil.g(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'g'); RETURN $1; END $$;
CREATE DOMAIN evil.d AS int CHECK (evil.g(VALUE) IS NOT NULL);
CREATE FUNCTION evil.eq(int, int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'eq'); RETURN $1 = $2; END $$;
CREATE OPERATOR evil.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = evil.eq);
CREATE TYPE evil.t AS (x int);
CREATE FUNCTION evil.to_t(int) RETURNS evil.t IMMUTABLE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'to_t'); RETURN ROW($1); END $$;
CREATE CAST (int AS evil.t) WITH FUNCTION evil.to_t(int);
CREATE FUNCTION evil.acc(bigint, int) RETURNS bigint IMMUTABLE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'acc'); RETURN $1 + $2; END $$;
CREATE AGGREGATE evil.total(int) (SFUNC = evil.acc, STYPE = bigint, INITCOND = '0');
CREATE FUNCTION evil.nice(int) RETURNS int IMMUTABLE LANGUAGE sql AS $$ SELECT $1 $$;
CREATE TYPE evil.ct AS (x evil.d);
CREATE TEXT SEARCH CONFIGURATION evil.cfg (COPY = pg_catalog.english);
CREATE FUNCTION evil.takes(evil.d[]) RETURNS int IMMUTABLE LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION evil.abs(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'abs'); RETURN $1; END $$;
CREATE FUNCTION evil.nvl(int, int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'nvl'); RETURN $1; END $$;
CREATE FUNCTION evil.ifnull(int, int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
  BEGIN INSERT INTO evil.calls VALUES (current_user, 'ifnull'); RETURN $1; END $$;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
"""


@pytest.fixture
def attacker(network, login, worker, fresh_dsn):
    """(role, dsn): a registrar who may read stream s only, with a schema of its own
    full of code (EVIL)."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    with psycopg.connect(fresh_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA evil AUTHORIZATION {}").format(
            sql.Identifier(role)))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(EVIL)
    yield role, dsn
    with psycopg.connect(fresh_dsn, autocommit=True) as admin:
        admin.execute("DROP SCHEMA evil CASCADE")  # the cast first: DROP OWNED cannot


def calls(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT who, what FROM evil.calls").fetchall()


@pytest.mark.parametrize("query, refused", [
    # hole 1: argus's own machinery, called by its qualified name
    ("SELECT id FROM s WHERE cardinality(argus.isolate(0, 1) || ARRAY[1]) >= 0",
     r"argus's own machinery|argus\.isolate"),
    ("SELECT id FROM s WHERE argus_catalog.apply_privileges() IS NULL", r"argus"),
    # hole 2: a registrar's function, qualified (VOLATILE, and IMMUTABLE but its own)
    ("SELECT evil.f(id) AS k, v FROM s WHERE evil.f(id) > 0", r"evil\.f"),
    ("SELECT evil.g(id) AS k FROM s", r"evil\.g"),
    ("SELECT id FROM s WHERE evil.g(1) = 1", r"evil\.g"),
    ("SELECT evil.nice(id) AS k FROM s", r"evil\.nice.*owned by role"),
    # hole 3: a cast to its domain, its type with a cast WITH FUNCTION
    ("SELECT id FROM s WHERE (id::evil.d) > 0", r"evil\.d"),
    ("SELECT id FROM s WHERE ('5'::evil.d) > 0", r"evil\.d"),
    ("SELECT id, (id::evil.t).x AS x FROM s", r"evil\.(to_)?t"),
    # a literal's input function runs as PostgreSQL parses it (array_in, record_in, then
    # the domain's CHECK): before any probe of the query reads a literal, the types
    # the query reaches are checked
    ("SELECT id FROM s WHERE '{1}'::evil.d[] IS NOT NULL", r"evil\.d"),
    ("SELECT id FROM s WHERE ('(1)'::evil.ct).x > 0", r"evil\.(ct|d)"),
    ("SELECT id FROM s WHERE evil.takes('{1}') > 0", r"evil\.(takes|d)"),
    # its text search configuration: it could change what the answer means at will
    ("SELECT id FROM s WHERE to_tsvector('evil.cfg', v) @@ 'x'::tsquery", r"evil\.cfg"),
    ("SELECT id, to_tsvector('evil.cfg'::text::regconfig, v) AS ts FROM s", r"regconfig"),
    ("SELECT id, to_tsvector(v::regconfig, v) AS ts FROM s", r"regconfig"),
    # hole 4: its operator
    ("SELECT id FROM s WHERE id OPERATOR(evil.===) 1", r"evil\.==="),
    # and its aggregate
    ("SELECT evil.total(id) AS n FROM s", r"evil\.total"),
])
def test_a_registrar_runs_none_of_its_own_code(network, attacker, query, refused):
    """Holes 1-4: what a query reaches (a qualified call, a cast to a domain or a type
    with a cast function, an operator, an aggregate) is checked by OID, not by the names
    it writes: refused, and nothing of it ran, then or in the cycles after."""
    role, dsn = attacker
    with argus.connect(dsn) as registrar:
        with pytest.raises(ArgusError, match=refused):
            registrar.register_query("q", query)
    network.insert("s", [(2, "y")])
    for _ in range(3):
        network.run()
    assert calls(dsn) == []
    assert {q.name: q.status for q in network.queries()} == {"a": "ok", "b": "ok"}


@pytest.mark.parametrize("query", ["SELECT id, abs(id) AS a FROM s",
                                   "SELECT id, nvl(id, 0) AS a FROM s",
                                   "SELECT id, ifnull(id, 0) AS a FROM s"])
def test_a_registrars_function_named_as_a_builtin_is_not_called(network, attacker, query):
    """Its schema first on its search path, a registrar's function named as one sqlglot
    knows (abs) or reads as another (nvl, ifnull as COALESCE): a registrar's request is
    read as the owner's worker reads it, PostgreSQL's catalog first (docs/security.md),
    so the query computes the built-in, and nothing of the registrar's runs."""
    role, dsn = attacker
    with argus.connect(make_conninfo(dsn, options="-c search_path=evil,public")) as registrar:
        registrar.register_query("q", query)
    network.insert("s", [(-2, "y")])
    network.run()
    assert calls(dsn) == []
    assert (-2, 2 if "abs" in query else -2) in network.results("q")


def test_a_registrars_stream_has_no_type_of_its_own(network, attacker):
    """A stream whose column is the registrar's domain would run the domain's CHECK as
    the owner whenever a cycle writes the history."""
    role, dsn = attacker
    with argus.connect(dsn) as registrar:
        with pytest.raises(ArgusError, match=r"evil\.d"):
            registrar.create_stream("mine", {"id": "evil.d"})
    assert [s.name for s in network.streams()] == ["s", "t"]


def queue(dsn: str, kind: str, name: str, body: str) -> int:
    """A request as any client language writes it: a row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("INSERT INTO argus_catalog.requests (kind, name, body) "
                            "VALUES (%s, %s, %s::jsonb) RETURNING request_id",
                            (kind, name, body)).fetchone()[0]


def outcome(db, request_id: int) -> tuple[str, str | None]:
    """The request's status and error, once a worker (the test's, or the fixture's
    thread, which may hold it) carried it out."""
    deadline = time.monotonic() + 30
    while True:
        db.process_requests()
        status, error = db.conn.execute("SELECT status, error FROM argus_catalog.requests "
                                        "WHERE request_id = %s", (request_id,)).fetchone()
        if status != "pending" or time.monotonic() > deadline:
            return status, error
        time.sleep(0.05)


def test_a_malformed_request_stops_nothing(network, login, fresh_dsn):
    """Hole 5: a body that is not the kind's shape made the worker raise, left the
    request pending at the head of the queue, and `argus run` exited before its cycle."""
    from click.testing import CliRunner

    from argus.cli import main

    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    poison = {body: queue(dsn, "register", "p", body) for body in (
        "{}", "[]", '"SELECT 1"', "17", '{"sql": 5}', '{"sql": "SELECT id FROM s", "x": 1}')}
    poison["create_stream"] = queue(dsn, "create_stream", "p", '{"columns": ["id int"]}')
    good = queue(dsn, "register", "fine", '{"sql": "SELECT id FROM s"}')
    network.insert("s", [(2, "y")])
    out = CliRunner().invoke(main, ["run", "--dsn", fresh_dsn], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "run " in out.output and "s 1" in out.output  # the cycle ran
    for body, request_id in poison.items():
        status, error = outcome(network, request_id)
        assert status == "failed" and "body" in error, (body, error)
    assert outcome(network, good) == ("done", None)
    assert sorted(network.results("fine")) == [(1,), (2,)]


def test_a_registrar_cannot_force(network, attacker):
    """Hole 6: `force` bypassed max_query_state and state_budget for a registrar."""
    role, dsn = attacker
    network.configure(max_query_state="1kB")
    network.insert("s", [(k, "v") for k in range(2, 500)])
    network.run()
    with argus.connect(dsn) as registrar:
        with pytest.raises(ArgusError, match="owner's decision"):
            registrar.register_query("big", "SELECT x.id, y.id AS j FROM s x, s y", force=True)
    request = queue(dsn, "register", "big",
                    '{"sql": "SELECT x.id, y.id AS j FROM s x, s y", "force": true}')
    network.process_requests()
    assert outcome(network, request)[0] == "failed"
    assert "owner's decision" in outcome(network, request)[1]
    assert [q.name for q in network.queries()] == ["a", "b"]


def test_a_revoked_registrars_requests_are_not_carried_out(network, login):
    """Hole 10: the worker checked nothing of the requester's rights when it acted."""
    role, dsn = login("registrar")
    network.grant("registrar", role)
    network.grant("reader", role, stream="s")
    request = queue(dsn, "register", "late", '{"sql": "SELECT id FROM s"}')
    dropping = queue(dsn, "create_stream", "late_stream", '{"columns": {"id": "int"}}')
    network.revoke("registrar", role)
    network.process_requests()
    for r in (request, dropping):
        status, error = outcome(network, r)
        assert status == "failed" and "no longer a registrar" in error
    assert [q.name for q in network.queries()] == ["a", "b"]
    assert [s.name for s in network.streams()] == ["s", "t"]


@pytest.mark.parametrize("evaluate", ["rerun", "incremental"])
def test_a_recursion_is_bounded_in_every_cycle(network, attacker, evaluate):
    """Hole 7: a recursive query's state cannot be estimated at registration; one row
    then made a cycle derive as many rows as it said, holding the cycle lock. Now each
    statement that derives its rows stops one row past max_query_state's worth, and the
    query is isolated as a failing row isolates it."""
    role, dsn = attacker
    network.configure(max_query_state="1kB")
    with argus.connect(dsn) as registrar:
        registrar.create_stream("e", {"src": "int", "dst": "int"})
        registrar.register_query(
            "closure", "WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM e UNION "
            "SELECT r.a, e.dst FROM r JOIN e ON e.src = r.b) SELECT a, b FROM r",
            evaluate=evaluate)
        registrar.insert("e", [(k, k + 1) for k in range(5)])
    network.run()
    assert len(network.results("closure")) == 15
    with argus.connect(dsn) as registrar:
        registrar.insert("e", [(k, k + 1) for k in range(100, 400)])  # 45,150 pairs
    report = network.run()
    assert "more than max_query_state" in report.failed["closure"]
    assert {q.name: q.status for q in network.queries()} == {
        "a": "ok", "b": "ok", "closure": "failed"}


def test_a_cycle_report_shows_a_role_only_the_queries_it_may_read(network, login):
    """Hole 8: a writer read every isolated query's error, and the row it failed on."""
    network.register_query("cast", "SELECT id, CASE WHEN id > 1 THEN secret::int END AS n "
                                   "FROM t")
    network.insert("t", [(2, "TOPSECRET-4711")])
    network.insert("s", [(2, "y")])
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    network.grant("reader", role, query="a")
    with argus.connect(dsn) as writer:
        report = writer.run()
        assert report.failed == {} and "cast" not in report.new_rows
        assert report.new_rows == {"a": 1}
    with psycopg.connect(dsn) as conn:
        (failed, queries) = conn.execute(
            "SELECT failed, queries FROM argus.cycle_report(%s)", (report.run_id,)).fetchone()
    assert failed == {} and set(queries) == {"a"}
    owners = argus.cycle.report(network.conn, report.run_id)
    assert "TOPSECRET-4711" in owners.failed["cast"]


def test_a_load_id_is_a_load_into_one_stream(network, login):
    """Hole 9: a writer of s claimed the id of the owner's coming load into t, which then
    loaded nothing (`duplicate=True, rows=0`)."""
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT argus.claim_load('nightly', 's', 'copy')").fetchone()[0]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT argus.loaded('nightly', 't')")
    result = network.insert("t", [(7, "ok")], load_id="nightly")
    assert result == 1
    network.run()
    assert (7, "ok") in network.results("b")
    assert network.insert("t", [(7, "ok")], load_id="nightly") == 0  # still once per stream


def test_the_dashboard_answers_only_its_own_names(network):
    """Hole 11: with `Host: attacker.example` (a name rebound to 127.0.0.1, DNS
    rebinding) the dashboard answered 200 with the secret answer."""
    pytest.importorskip("flask", reason="the dashboard extra is not installed")
    from argus.dashboard import create_app

    client = create_app(network.dsn).test_client()
    stolen = client.get("/query/b", headers={"Host": "attacker.example"})
    assert stolen.status_code == 400 and b"classified" not in stolen.data
    mine = client.get("/query/b", headers={"Host": "127.0.0.1:8787"})
    assert mine.status_code == 200 and b"classified" in mine.data
    assert mine.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in mine.headers["Content-Security-Policy"]
    assert client.get("/", headers={"Host": "localhost:8787"}).status_code == 200


# -- a registrar's code, reached every way a query can reach it ----------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

SAFE = ["abs({})", "({} + 1)", "coalesce({}, 0)", "({})::bigint", "greatest({}, 2)"]
EVIL_WRAPS = ["evil.f({})", "evil.g({})", "(({})::evil.d)", "((({})::evil.t)).x",
              "evil.nice({})", "(CASE WHEN {} OPERATOR(evil.===) 1 THEN 1 ELSE 0 END)"]
PLACES = ["SELECT {} AS k FROM s", "SELECT id FROM s WHERE {} > 0",
          "SELECT {} AS k, count(*) AS n FROM s GROUP BY 1",
          "SELECT sum({}) AS n FROM s", "SELECT id FROM s WHERE id IN (SELECT {} FROM s)",
          "SELECT x.id FROM s x JOIN (SELECT id AS j, v FROM s) y ON x.id = y.j WHERE {} <> 7",
          "SELECT v, max({}) AS m FROM s GROUP BY v HAVING count(*) > 0",
          "SELECT id, row_number() OVER (ORDER BY {}) AS r FROM s"]


@st.composite
def expressions(draw) -> tuple[str, bool]:
    """An integer expression over s (text, and whether it reaches the registrar's code)."""
    expr, evil = draw(st.sampled_from(["id", "1", "length(v)"])), False
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            expr, evil = draw(st.sampled_from(EVIL_WRAPS)).format(expr), True
        else:
            expr = draw(st.sampled_from(SAFE)).format(expr)
    return expr, evil


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_query_runs_a_registrars_code(network, attacker, data):
    """Property: whatever a query wraps around a registrar's function, domain, type,
    operator, wherever in the query, it is refused, and nothing of the registrar's runs in
    the registration or the five cycles after."""
    role, dsn = attacker
    (expr, evil), place = data.draw(expressions()), data.draw(st.sampled_from(PLACES))
    query = place.format(expr)
    name = f"p{abs(hash(query)) % 10**8}"
    with argus.connect(dsn) as registrar:
        try:
            registrar.register_query(name, query)
            registered = True
        except ArgusError:
            registered = False
    assert not (registered and evil), query
    for k in range(5):
        network.insert("s", [(10 + k, "w")])
        network.run()
    assert calls(dsn) == [], query
    if registered:
        with argus.connect(dsn) as registrar:
            registrar.unregister_query(name)


def test_a_set_returning_function_of_the_data_is_bounded(network, attacker):
    """Of the attack on issue 48's fixes: `generate_series(1, id)` was accepted (its
    estimate is PostgreSQL's 1,000 rows a row), and one row with id = 2,000,000,000 made
    a cycle run for as long as it took, holding the cycle lock."""
    role, dsn = attacker
    network.configure(max_query_state="1MB")
    with argus.connect(dsn) as registrar:
        registrar.register_query("series", "SELECT id, generate_series(1, id) AS g FROM s")
    network.insert("s", [(3, "small")])
    network.run()
    assert sorted(network.results("series")) == [(1, 1), (3, 1), (3, 2), (3, 3)]
    network.insert("s", [(2_000_000_000, "huge")])
    report = network.run()
    assert "more than max_query_state" in report.failed["series"]
    assert {q.name: q.status for q in network.queries()} == {
        "a": "ok", "b": "ok", "series": "failed"}


def test_an_expanding_selection_kept_as_a_view_is_bounded(network, attacker):
    """A selection whose set-returning call expands rows is a view of its stream
    (network.layouts.view_of_stream): no statement of its own makes its rows, so its
    count each cycle stops one row past the bound and fails there, isolating the
    queries reading it before any of them expands a row of id 2,000,000,000."""
    role, dsn = attacker
    network.configure(max_query_state="1MB")
    with argus.connect(dsn) as registrar:
        registrar.register_query("per_id", "SELECT id, count(*) AS n FROM (SELECT id, "
                                           "generate_series(1, id) AS g FROM s) x GROUP BY id")
    (layout,) = network.conn.execute(
        "SELECT layout->>'virtual' FROM argus_catalog.nodes WHERE kind = 'select'"
        " AND definition ? 'expands'").fetchone()
    assert layout == "true"
    network.insert("s", [(3, "small")])
    network.run()
    network.insert("s", [(2_000_000_000, "huge")])
    report = network.run()
    assert "more than max_query_state" in report.failed["per_id"]


@pytest.mark.parametrize("expands", [
    "generate_series(1, id)", "generate_subscripts(array_fill(0, ARRAY[id]), 1)",
    "jsonb_path_query(to_jsonb(array_fill(0, ARRAY[id])), '$[*]')"])
def test_every_set_returning_function_is_bounded(network, attacker, expands):
    """Of the second attack: set-returning functions the bound did not know by name
    (generate_subscripts, jsonb_path_query) gave a million rows for one row."""
    role, dsn = attacker
    network.configure(max_query_state="3200000")  # 100,000 rows
    with argus.connect(dsn) as registrar:
        registrar.register_query("many", f"SELECT id, {expands} AS g FROM s")
    network.insert("s", [(1_000_000, "huge")])
    report = network.run()
    assert "more than max_query_state" in report.failed["many"]


def test_a_cycle_past_node_timeout_isolates_the_query_then_runs_without_it(network,
                                                                          attacker):
    """Of the second attack: a jsonpath of nested filters over one row of 200 bytes made a
    cycle compute for hours, holding the cycle lock. Past node_timeout the node then
    running is isolated and the cycle runs again without it."""
    role, dsn = attacker
    network.configure(node_timeout="1s", virtual_selectivity=None)  # (a table, not a view)
    with argus.connect(dsn) as registrar:
        registrar.register_query(
            "slow", "SELECT id FROM s WHERE CASE WHEN left(v, 1) = '[' THEN v::jsonb @? "
            "'$[*] ? (exists($[*] ? (exists($[*] ? (exists($[*] ? (@ == -1)))))))' END")
    network.insert("s", [(2, "[" + ", ".join(["0"] * 120) + "]"), (3, "fine")])
    started = time.monotonic()
    report = network.run()
    assert time.monotonic() - started < 30
    assert "node_timeout" in report.failed["slow"]
    assert sorted(network.results("a")) == [(1, "x"), (2, "[" + ", ".join(["0"] * 120) + "]"),
                                            (3, "fine")]
    assert {q.name: q.status for q in network.queries()}["slow"] == "failed"


def test_node_timeout_isolates_the_node_that_spent_the_time(network):
    """A registrar's slow node spent node_timeout; the cancel landed in the node running
    next (the stream's flush, shared by every query over it) and isolated every query
    over the stream (a helper). The node that spent most of the cycle's time is the
    one isolated: here `hog` (0.9 s of a 1 s node_timeout), not `nap` (0.3 s), whose
    node ran when the time ran out."""
    network.conn.execute("""
        CREATE FUNCTION public.hog(i int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql
        AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN i > 0; END $$;
        CREATE FUNCTION public.nap(i int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql
        AS $$ BEGIN PERFORM pg_sleep(0.1); RETURN i > 0; END $$""")
    network.conn.commit()
    network.configure(node_timeout="1s", virtual_selectivity=None)  # (tables, not views)
    network.register_query("hog", "SELECT id FROM s WHERE public.hog(id)")
    network.register_query("nap", "SELECT id FROM s WHERE public.nap(id)")
    network.insert("s", [(2, "y"), (3, "z"), (4, "w")])
    report = network.run()
    assert "node_timeout" in report.failed["hog"], report.failed
    assert {q.name: q.status for q in network.queries()} == {
        "a": "ok", "b": "ok", "hog": "failed", "nap": "ok"}
    assert sorted(network.results("nap")) == [(1,), (2,), (3,), (4,)]


def test_a_literal_ending_in_a_backslash_stays_a_literal_in_any_session(network, attacker):
    """A registrar's `$$a\\$$` is written into a join's code as 'a\\'. A cycle run from a
    session with standard_conforming_strings off read that backslash as escaping the
    quote, and the registrar's next literal became SQL run as argus's owner (a helper
    read a stream it was not granted, granted it to itself, and replaced a function a
    superuser's read of an answer then ran). Every argus function pins how it parses."""
    role, dsn = attacker
    query = (r"SELECT a.id, b.v FROM mine a JOIN mine b ON a.id = b.id AND b.v <> $$a\$$ "
             r"|| a.v || $$ )) AS s; INSERT INTO evil.calls VALUES (current_user, "
             r"'injected'); SELECT 1 FROM (SELECT 1 --$$")
    with argus.connect(dsn) as registrar:
        registrar.create_stream("mine", {"id": "bigint", "v": "text"})
        registrar.register_query("leak", query)
        registrar.insert("mine", [(1, "x"), (2, "a\\")])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET standard_conforming_strings = off")
        conn.execute("SET transform_null_equals = on")
        conn.execute("SELECT argus.run_cycle()")
    assert calls(dsn) == []
    assert {q.name: q.status for q in network.queries()}["leak"] == "ok"
    scratch = network.conn.execute(query.replace("mine", "argus_streams.mine")).fetchall()
    assert sorted(network.results("leak")) == sorted(scratch) == [(1, "x"), (2, "a\\")]


def test_a_role_with_nothing_cannot_hold_the_cycle_lock(network, login):
    """The cycle lock was an advisory lock, which takes no privilege: any role that could
    connect held it (`SELECT pg_advisory_lock(1095911253, 83)`) and every cycle, every
    registration waited or did nothing for as long as its session lived (a helper).
    It is a lock on a table of argus's owner now."""
    role, dsn = login("nothing")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(1095911253, 83)")  # the old lock, held
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with conn.transaction():
                conn.execute("LOCK TABLE argus_catalog.cycle_lock")
        network.insert("s", [(2, "y")])
        network.run(wait=False)
        network.register_query("c", "SELECT id FROM s WHERE id > 1")
    assert sorted(network.results("c")) == [(2,)]


def test_a_writers_own_statement_timeout_isolates_no_query(network, login):
    """A writer of s ran cycles with `SET statement_timeout = '20ms'`: the cancel was
    taken for node_timeout, and whichever query's node was running was isolated — t's,
    which the writer may not touch (a helper). A cancel before node_timeout has passed
    isolates nothing: the cycle is rolled back, its rows wait."""
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    network.register_query("pairs", "SELECT x.id, y.secret FROM t x JOIN t y ON x.id = y.id")
    network.insert("t", [(k, "x" * 50) for k in range(2, 60_000)])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT argus.run_cycle()")  # (its program compiled: the next is slow
        network.insert("t", [(k, "y") for k in range(60_000, 120_000)])  # in its nodes)
        conn.execute("SET statement_timeout = '100ms'")
        try:
            (run_id,) = conn.execute("SELECT argus.run_cycle()").fetchone()
        except psycopg.errors.QueryCanceled:
            run_id = None
    assert {q.name: q.status for q in network.queries()} == {
        "a": "ok", "b": "ok", "pairs": "ok"}
    if run_id is not None:
        (status, error) = network.conn.execute(
            "SELECT status, error FROM argus_catalog.runs WHERE run_id = %s",
            (run_id,)).fetchone()
        assert status == "failed" and "cancel" in error, error
    network.run()
    assert len(network.results("pairs")) == 120_000 - 1
    # a statement that began long before its cycle: node_timeout counts from the cycle's
    # start (the caller's statement's, the writer slept into it; a helper)
    network.configure(node_timeout="1s")
    network.insert("t", [(k, "z") for k in range(120_000, 180_000)])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = '1100ms'")
        with pytest.raises(psycopg.errors.QueryCanceled):  # (the DO's own statement)
            conn.execute("DO $$ BEGIN PERFORM pg_sleep(1); PERFORM argus.run_cycle(true); "
                         "RAISE query_canceled; END $$")
    assert {q.name: q.status for q in network.queries()}["pairs"] == "ok"


def test_a_reader_sees_held_back_rows_only_of_streams_it_may_read(network, login):
    """`argus.quarantine` showed every stream's held-back rows, values and all, to a
    reader of answers, who may not read histories (a helper)."""
    network.create_stream("u", {"id": "int", "secret": "text", "at": "timestamptz"},
                          time_column="at")
    network.register_query("recent", "SELECT id FROM u")
    network.insert("u", [(1, "now", "2024-03-01 12:00+00")])
    network.run()
    network.insert("u", [(2, "FUTURE-SECRET", "2204-01-01 00:00+00")])
    assert network.run().quarantined == {"u": 1}
    reader, reader_dsn = login("reader")
    network.grant("reader", reader)
    streams, streams_dsn = login("streams")
    network.grant("reader", streams)
    network.grant("reader", streams, stream="u")
    with psycopg.connect(reader_dsn) as conn:
        assert conn.execute("SELECT * FROM argus.quarantine").fetchall() == []
        seen = []  # a cheap function of its own ran before the view's filter (a helper)
        conn.add_notice_handler(lambda diag: seen.append(diag.message_primary))
        conn.execute("CREATE FUNCTION pg_temp.peek(jsonb) RETURNS boolean LANGUAGE plpgsql "
                     "COST 0.0001 AS $f$ BEGIN RAISE NOTICE 'leak %', $1; RETURN true; END $f$")
        assert conn.execute("SELECT row FROM argus.quarantine WHERE pg_temp.peek(row)"
                            ).fetchall() == []
        assert not [m for m in seen if "SECRET" in (m or "")]
    with psycopg.connect(streams_dsn) as conn:
        rows = conn.execute("SELECT stream, row ->> 'secret' FROM argus.quarantine").fetchall()
    assert rows == [("u", "FUTURE-SECRET")]


def test_a_writers_session_settings_change_no_answer(network, login):
    """A writer set its session's text search configuration (or to_char's locale, the
    time zone abbreviations, xmlbinary, xmloption) before its cycles, and stored answers
    computed with it (two helpers): every cycle evaluates with the values the installing
    session had."""
    role, dsn = login("writer")
    network.grant("writer", role, stream="s")
    query = "SELECT to_tsvector(v)::text AS words, count(*) AS n FROM s GROUP BY 1"
    network.register_query("words", query)
    network.insert("s", [(2, "The running cats")])
    zoned = ("SELECT (v::timestamptz AT TIME ZONE 'UTC')::date AS day, count(*) AS n "
             "FROM s WHERE v LIKE '2024%' GROUP BY 1")
    network.register_query("days", zoned)
    network.insert("s", [(3, "2024-01-01 03:00 IST")])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET default_text_search_config = 'pg_catalog.simple'")
        conn.execute("SET xmloption = document")
        conn.execute("SET timezone_abbreviations = 'India'")  # (IST: +05:30, not +02:00)
        conn.execute("SELECT argus.run_cycle()")
    scratch = network.conn.execute(query.replace("FROM s", "FROM argus_streams.s")).fetchall()
    assert sorted(network.results("words")) == sorted(scratch)
    assert network.results("days") == network.conn.execute(
        zoned.replace("FROM s", "FROM argus_streams.s")).fetchall()
    assert ("'cat':3 'run':2", 1) in scratch or "english" not in network.conn.execute(
        "SELECT current_setting('default_text_search_config')").fetchone()[0]


def test_a_readers_open_subscription_holds_up_no_cycle(network, login):
    """argus.subscribe took the cycle lock to its caller's transaction's end: a reader
    that subscribed in a transaction it kept busy held every cycle (a helper). It takes
    the lock only to make the query's log, once."""
    role, dsn = login("reader")
    network.grant("reader", role, query="a")
    list(zip(range(1), network.subscribe("a", timeout=0)))  # (the log is made)
    with psycopg.connect(dsn) as conn:  # (a transaction left open)
        conn.execute("SELECT * FROM argus.subscribe('a')")
        network.insert("s", [(2, "y")])
        assert network.run(wait=False).new_rows == {"a": 1}
