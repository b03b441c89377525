"""Which streams' histories Citus holds, and how: sharded by a column, or copied to
every node. Read by the network's modules and argus.citus alike (it imports nothing of
the network)."""

from __future__ import annotations

import psycopg


def installed(conn: psycopg.Connection) -> bool:
    """Is this database a Citus coordinator's (the extension created in it)?"""
    return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'"
                        ).fetchone() is not None


def placed(conn: psycopg.Connection) -> dict[str, str | None]:
    """Each stream whose history Citus holds: its distribution column, or None for a
    reference table (a copy of it on every node)."""
    if not installed(conn):
        return {}
    return dict(conn.execute(
        """SELECT s.name, CASE p.partmethod WHEN 'h'
                          THEN column_to_column_name(p.logicalrelid, p.partkey) END
             FROM argus_catalog.streams s
             JOIN pg_dist_partition p ON p.logicalrelid = format('%I.%I', 'argus_streams',
                                                                  s.name)::regclass
            WHERE p.partmethod = 'h' OR p.partmethod = 'n' AND p.repmodel = 't'
            ORDER BY 1""").fetchall())


def distributed(conn: psycopg.Connection) -> dict[str, str]:
    """Each stream whose history is distributed, and its distribution column."""
    return {name: by for name, by in placed(conn).items() if by is not None}


def replicated(conn: psycopg.Connection) -> list[str]:
    """The streams whose history is a reference table (copied to every node)."""
    return [name for name, by in placed(conn).items() if by is None]


def held(conn: psycopg.Connection, tables: list[str]) -> set[str]:
    """Those of the tables (qualified, quoted names) that Citus holds, distributed or
    copied to every node."""
    if not tables or not installed(conn):
        return set()
    return {t for (t,) in conn.execute(
        "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(t) IN "
        "(SELECT logicalrelid FROM pg_dist_partition)", (tables,))}
