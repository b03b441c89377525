"""Fuzzing registration: thousands of malformed and hostile query texts and names.

Each is either registered (and then dropped) or refused with an ArgusError — never
another exception — and afterwards the catalog is intact: every query has its views,
every node its tables, no table is orphaned, and a cycle runs.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

import argus

VALID = [
    "SELECT tran_id, amount FROM transfers WHERE amount > 10",
    "SELECT sender, count(*) AS n FROM transfers GROUP BY sender HAVING count(*) > 1",
    "SELECT a.tran_id FROM transfers a JOIN transfers b ON b.sender = a.receiver",
    "SELECT sender FROM transfers UNION SELECT receiver FROM transfers",
    "WITH x AS (SELECT * FROM transfers) SELECT DISTINCT sender FROM x",
]
HOSTILE = ["'", '"', ";", "--", "/*", "*/", "$$", "$q$", "\\", ")", "(", "DROP TABLE x",
           "; DELETE FROM argus_catalog.queries;", "pg_sleep(10)", "\x00", "\u2028", "😀",
           "' OR '1'='1", "E'\\x41'", "::regclass", "argus_catalog.nodes", "COPY",
           "SELECT", "FROM", "WHERE", "UNION", "LIMIT 1", "ORDER BY 1", "OVER ()",
           "argus_now()", "random()", "1/0", "NULL", "*", ",", ".", "x" * 100]
EXAMPLES = int(os.environ.get("ARGUS_FUZZ_EXAMPLES", "2000"))


@st.composite
def mutated(draw) -> str:
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=5)))
        end = min(len(text), position + draw(st.integers(0, 8)))
        if action == "insert":
            text = text[:position] + piece + text[position:]
        elif action == "delete":
            text = text[:position] + text[end:]
        else:
            text = text[:position] + piece + text[end:]
    return text


SQL_TEXTS = st.one_of(mutated(), st.text(max_size=60),
                      st.lists(st.sampled_from(HOSTILE), max_size=8).map(" ".join))
NAMES = st.one_of(st.text(max_size=70), st.sampled_from(HOSTILE),
                  st.from_regex(r"[a-z_][a-z0-9_]{0,70}", fullmatch=True))


def check_integrity(db) -> None:
    conn = db.conn
    for info in db.queries():
        for schema in ("argus_results", "argus_changes"):
            assert conn.execute("SELECT to_regclass(%s)", (f'{schema}."{info.name}"',)
                                ).fetchone()[0], f"view {schema}.{info.name} is missing"
    expected = set()
    for node_id, schema, name, kind in conn.execute(
            "SELECT node_id, hist_schema, hist_name, kind FROM argus_catalog.nodes"):
        expected.add(f"n{node_id}_delta")
        if kind != "stream":
            expected.add(name)
        assert conn.execute("SELECT to_regclass(%s)", (f'{schema}."{name}"',)).fetchone()[0]
    tables = {r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'argus_net'")}
    orphans = {t for t in tables - expected if not any(t.startswith(e.split("_delta")[0] + "_")
                                                       for e in expected)}
    assert not orphans, f"tables without a node: {orphans}"
    db.run()  # the assembled program compiles and runs


def test_hostile_registrations_are_refused_cleanly(transfers):
    db = transfers.db
    db.register_query("keeper", "SELECT tran_id FROM transfers WHERE amount > 5")
    outcomes = {"registered": 0, "refused": 0}

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(name=NAMES, text=SQL_TEXTS)
    def attempt(name, text):
        before = db.conn.execute("SELECT count(*) FROM argus_catalog.queries").fetchone()[0]
        try:
            info = db.register_query(name, text)
        except argus.ArgusError as exc:
            assert str(exc), "an error must say what is wrong"
            outcomes["refused"] += 1
            after = db.conn.execute("SELECT count(*) FROM argus_catalog.queries").fetchone()[0]
            assert after == before
            return
        outcomes["registered"] += 1
        db.unregister_query(info.name)

    attempt()
    check_integrity(db)
    assert db.results("keeper") == []
    total = db.conn.execute(sql.SQL("SELECT count(*) FROM argus_catalog.queries")).fetchone()[0]
    assert total == 1
    print(f"\nfuzzed registrations: {outcomes['refused']} refused, "
          f"{outcomes['registered']} valid and registered")
