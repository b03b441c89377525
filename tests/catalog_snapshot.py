"""Everything argus keeps in a database, as one comparable value: catalog rows and the
relations in argus's schemas. Equal snapshots mean a refused request changed nothing."""

from __future__ import annotations

from psycopg import sql

from argus.names import SCHEMAS


def snapshot(conn) -> dict:
    tables = [r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'argus_catalog' ORDER BY 1")]
    state = {t: sorted(map(repr, conn.execute(sql.SQL("SELECT * FROM {}").format(
        sql.Identifier("argus_catalog", t))).fetchall())) for t in tables if t != "runs"}
    state["relations"] = conn.execute(
        """SELECT n.nspname, c.relname, c.relkind FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ANY(%s) ORDER BY 1, 2""", (list(SCHEMAS),)).fetchall()
    return state
