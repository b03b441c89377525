"""Security: the exploits of issue 18 fail, and argus's own code does not depend on
whoever runs it (its search_path, its functions)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from argus import QueryError
from argus.errors import QueryFailedError


def test_a_callers_search_path_cannot_put_its_functions_in_a_cycle(oracle, fresh_dsn):
    """`CREATE FUNCTION evil.upper(varchar)`, then a cycle run with `SET search_path =
    evil, public`: the cycle's code resolves names as at registration (pg_catalog
    first), so the answer is PostgreSQL's."""
    import psycopg

    oracle.create_stream("s", {"id": "int", "c": "varchar"})
    oracle.register("q", "SELECT id FROM s WHERE upper(c) = 'AB'")
    with psycopg.connect(fresh_dsn, autocommit=True) as evil:
        evil.execute("CREATE SCHEMA evil")
        evil.execute("CREATE FUNCTION evil.upper(varchar) RETURNS text IMMUTABLE "
                     "LANGUAGE sql AS $$ SELECT 'AB' $$")
        oracle.insert("s", [(1, "ab"), (2, "xy")])
        evil.execute("SET search_path = evil, public")
        oracle.run(lambda: evil.execute("SELECT argus.run_cycle()").fetchone())
    assert oracle.db.results("q") == [(1,)]


def test_user_functions_are_called_by_their_schema(oracle, fresh_dsn):
    """A function of the registrant's search_path is written schema-qualified into the
    node code: a cycle run with another search_path calls the same one."""
    import psycopg

    oracle.conn.execute("CREATE FUNCTION public.double_it(int) RETURNS int IMMUTABLE "
                        "LANGUAGE sql AS $$ SELECT 2 * $1 $$")
    oracle.create_stream("s", {"id": "int"})
    oracle.register("q", "SELECT id, double_it(id) AS d FROM s WHERE double_it(id) > 2")
    with psycopg.connect(fresh_dsn, autocommit=True) as other:
        other.execute("SET search_path = pg_temp")
        oracle.insert("s", [(1,), (2,)])
        oracle.run(lambda: other.execute("SELECT argus.run_cycle()").fetchone())
    assert oracle.db.results("q") == [(2, 4)]


def test_functions_must_be_immutable_and_trusted(db, fresh_dsn):
    import psycopg

    db.create_stream("s", {"id": "int"})
    db.conn.execute("CREATE FUNCTION public.stable_one(int) RETURNS int STABLE "
                    "LANGUAGE sql AS $$ SELECT $1 $$")
    with pytest.raises(QueryError, match=r"public.stable_one\(\).*IMMUTABLE"):
        db.register_query("q", "SELECT id FROM s WHERE stable_one(id) > 0")
    with psycopg.connect(fresh_dsn, autocommit=True) as admin:
        admin.execute("CREATE ROLE argus_test_nobody NOLOGIN")
        try:
            admin.execute("CREATE FUNCTION public.theirs(int) RETURNS int IMMUTABLE "
                          "LANGUAGE sql AS $$ SELECT $1 $$")
            admin.execute("ALTER FUNCTION public.theirs(int) OWNER TO argus_test_nobody")
            with pytest.raises(QueryError, match=r"owned by a superuser"):
                db.register_query("q", "SELECT id FROM s WHERE theirs(id) > 0")
        finally:
            admin.execute("DROP FUNCTION IF EXISTS public.theirs(int)")
            admin.execute("DROP ROLE argus_test_nobody")


def refused_under(oracle, path: str, query: str, match: str) -> None:
    """`query` refused (`match`) when registered under the search path `path`."""
    oracle.conn.execute("SELECT set_config('search_path', %s, false)", (path,))
    try:
        with pytest.raises(QueryError, match=match):
            oracle.db.register_query("q", query)
    finally:
        oracle.conn.execute("RESET search_path")


def test_a_function_ahead_of_pg_catalogs_is_called_by_its_schema_or_refused(oracle):
    """`abs` of a schema placed before pg_catalog on the search path: PostgreSQL calls
    it, and argus, which reads abs() as PostgreSQL's own, called pg_catalog's instead.
    It is refused, naming it; called by its schema, it is the one computed. So is a
    function of a name sqlglot reads as another (nvl as COALESCE)."""
    oracle.conn.execute("CREATE SCHEMA mine; GRANT USAGE ON SCHEMA mine TO PUBLIC")
    oracle.conn.execute("CREATE FUNCTION mine.abs(int) RETURNS int IMMUTABLE "
                        "LANGUAGE sql AS $$ SELECT 1000 + $1 $$")
    oracle.create_stream("s", {"id": "int"})
    refused_under(oracle, "mine, pg_catalog, public", "SELECT abs(id) AS a FROM s",
                  r"mine\.abs\(\).*call it by its schema")
    oracle.conn.execute("CREATE FUNCTION mine.nvl(int, int) RETURNS int IMMUTABLE "
                        "LANGUAGE sql AS $$ SELECT 7 $$")  # sqlglot reads nvl() as COALESCE
    refused_under(oracle, "public, mine", "SELECT nvl(id, 0) AS a FROM s",
                  r"mine\.nvl\(\).*call it by its schema")
    oracle.register("q", "SELECT mine.abs(id) AS a, abs(id) AS b, ceiling(id) AS c FROM s")
    oracle.insert("s", [(-2,), (3,)])
    oracle.run()
    assert sorted(oracle.db.results("q")) == [(998, 2, -2), (1003, 3, 3)]


def test_the_programs_estimate_functions_call_pg_catalogs_operators_whatever_the_path(db):
    """argus.misjudged and argus.planned_rows have no SET search_path (the program calls
    misjudged at every node, which inlines planned_rows), so each operator in them is
    pg_catalog's by name: called with a search_path that finds an operator of an exact
    type pg_catalog lacks (>(float8, bigint)) first, they ran it as whoever called (found
    by a helper). So does argus.numeric_sqrt (a stddev's root), whose body is parsed
    where it runs (a second helper)."""
    conn = db.conn
    conn.execute("CREATE SCHEMA planted")
    conn.execute("CREATE TABLE planted.ran (op text)")
    for i, (op, left, right) in enumerate(
            ((">", "float8", "bigint"), ("<", "float8", "numeric"), ("*", "real", "bigint"),
             ("/", "bigint", "integer"), ("/", "numeric", "integer"),  # (numeric_sqrt's)
             ("/", "integer", "numeric"))):
        name = f"op{i}"
        conn.execute(f"CREATE FUNCTION planted.{name}({left}, {right}) RETURNS boolean "
                     f"LANGUAGE sql AS $$ INSERT INTO planted.ran VALUES ('{op}') "
                     "RETURNING true $$")
        conn.execute(f"CREATE OPERATOR planted.{op} (LEFTARG = {left}, RIGHTARG = {right}, "
                     f"FUNCTION = planted.{name})")
    conn.execute("CREATE TABLE planted.delta (x int)")
    conn.execute("INSERT INTO planted.delta SELECT generate_series(1, 1000)")
    with conn.transaction():
        conn.execute("SET LOCAL search_path TO planted, public")
        for est, rows in ((-3.5, 5), (2.0, 900), (40.0, 10), (None, 1)):
            conn.execute("SELECT argus.misjudged(%s::real, 'planted.delta'::regclass, "
                         "%s::bigint), argus.planned_rows(%s::real, 'planted.delta'::regclass)",
                         (est, rows, est))
        assert conn.execute("SELECT argus.numeric_sqrt(2.25)").fetchone() == (Decimal("1.50"),)
    assert conn.execute("SELECT count(*) FROM planted.ran").fetchone()[0] == 0


def test_an_operator_on_the_owners_search_path_never_runs_in_the_owners_commands(
        oracle, monkeypatch):
    """A registrar that may create in a schema on the owner's search_path (public before
    PostgreSQL 15, a schema named as the owner's login role) puts an operator of exact
    types there after registering `v <> 'a'` over varchar: PostgreSQL prefers it to
    pg_catalog's text <> text. The owner's (or a superuser's) `explain` (its estimate
    of the selection), `optimize --dry-run` and a re-plan (re-running the query to
    price re-running it), `retry` (the isolated query's nodes rebuilt) and the audit
    ran it with their rights (found by a helper); each now resolves names as the cycles
    do."""
    from argus import audit
    from argus.adapt import optimize, records

    monkeypatch.setattr(records, "WORTH_MS", 0.0)  # (p is worth re-running to price it)
    conn = oracle.conn
    conn.execute("CREATE SCHEMA planted")
    conn.execute("CREATE SEQUENCE planted.calls")  # (counts calls a rollback undid too)
    conn.execute("CREATE FUNCTION planted.ne(varchar, varchar) RETURNS boolean "
                 "LANGUAGE plpgsql AS $$ BEGIN PERFORM nextval('planted.calls'); "
                 "RETURN true; END $$")
    oracle.create_stream("s", {"id": "int", "v": "varchar"})
    oracle.insert("s", [(i, "a" if i % 10 else "b") for i in range(1, 301)])
    oracle.run()
    oracle.register("q", "SELECT id, v FROM s WHERE v <> 'a' AND v <> 'c' AND 10 / id > 0")
    oracle.register("p", "SELECT a.id, b.v FROM s a JOIN s b ON a.id = b.id WHERE a.v <> 'a'")
    oracle.insert("s", [(0, "d")])  # (10 / 0: q is isolated)
    oracle.run()
    conn.execute("ANALYZE")
    conn.execute("CREATE OPERATOR planted.<> (LEFTARG = varchar, RIGHTARG = varchar, "
                 "FUNCTION = planted.ne, RESTRICT = eqsel)")
    def calls() -> int:
        return conn.execute("SELECT CASE WHEN is_called THEN last_value ELSE 0 END "
                            "FROM planted.calls").fetchone()[0]

    def retried() -> None:
        with pytest.raises(QueryError, match="still fails"):
            oracle.db.retry("q")

    ran = {}
    conn.execute("SET search_path = planted, public")
    try:
        for what, call in (("explain", lambda: oracle.db.explain("p")),
                           ("optimize", lambda: optimize(conn, ["p"], apply=False)),
                           ("retry", retried), ("audit", lambda: audit.audit(conn, rows=10))):
            before = calls()
            call()
            ran[what] = calls() - before
    finally:
        conn.execute("RESET search_path")
    assert ran == {"explain": 0, "optimize": 0, "retry": 0, "audit": 0}


def test_argus_reads_its_catalog_with_no_function_of_the_callers_path(oracle, monkeypatch):
    """argus's own catalog statements ran on the caller's search_path: a registrar that
    may create in `public` put exact-typed functions there — concat_ws(text, text, text)
    before pg_catalog's variadic one, substr(name, integer), array_to_string(text[],
    text) — and the owner's `status`, `results`, `explain`, `drop` and the dashboard ran
    them as the owner (found by a helper). The API's methods, the command line's session
    and the dashboard's now read with the path cycles use; the caller's SQL keeps its
    own."""
    from click.testing import CliRunner

    from argus.cli import main
    from argus.dashboard import create_app

    conn, db = oracle.conn, oracle.db
    conn.execute("CREATE SCHEMA planted; CREATE SEQUENCE planted.calls")
    for signature, returns in (("concat_ws(text, text, text)", "text"),
                               ("substr(name, integer)", "text"),
                               ("array_to_string(text[], text)", "text")):
        conn.execute(f"CREATE FUNCTION planted.{signature} RETURNS {returns} LANGUAGE plpgsql "
                     "AS $$ BEGIN PERFORM nextval('planted.calls'); RETURN ''; END $$")
    oracle.create_stream("s", {"id": "int"})
    oracle.register("q", "SELECT id, 10 / id AS inv FROM s")
    oracle.insert("s", [(1,), (0,)])
    oracle.run()  # (q is isolated: its error is read with concat_ws)
    monkeypatch.setenv("PGOPTIONS", "-c search_path=planted,public")
    conn.execute("SET search_path = planted, public")
    try:
        with pytest.raises(QueryFailedError, match="division by zero"):
            db.results("q")
        assert "query q" in db.explain("q") and [i.name for i in db.queries()] == ["q"]
        for command, shown in ((["status"], "division by zero"), (["explain", "q"], "query q"),
                               (["results", "q"], "division by zero")):
            result = CliRunner().invoke(main, [*command, "--dsn", db.dsn])
            assert shown in result.output, (command, result.output)  # (it read the catalog)
        client = create_app(db.dsn).test_client()
        assert client.get("/").status_code == 200 and client.get("/node/1").status_code == 200
        db.unregister_query("q")
        assert conn.execute("SELECT pg_catalog.current_setting('search_path')").fetchone() \
            == ("planted, public",)  # (the caller's own, after each call)
    finally:
        conn.execute("RESET search_path")
    assert conn.execute("SELECT is_called FROM planted.calls").fetchone() == (False,)
