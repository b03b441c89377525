"""Capture by a logical replication slot (argus track --method slot): the writers pay
nothing but their WAL, and each cycle reads the changes committed since the last one
(argus.read_capture in catalog/functions.sql, through the reader in
sql_templates/stream/capture_slot_function.sql). One slot and one publication per
database hold every table tracked so. The slot and the publication are created before
the table's lock is taken (a slot waits for running transactions); the position
recorded under that lock separates the backfill from the slot's changes (argus.track).
"""

from __future__ import annotations

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from . import roles, tables
from .errors import ArgusError, InvalidNameError
from .frontend.analyze import StreamSchema
from .names import LOCK_CYCLES, INBOX_SCHEMA, stream_inbox
from .nodes.base import cols
from .templates import render

PUBLICATION = "argus_capture"
READER = sql.Identifier(INBOX_SCHEMA, "capture slot")  # the slot's reader


def exists(conn: psycopg.Connection) -> bool:
    return conn.execute("SELECT 1 FROM argus_catalog.capture_slot").fetchone() is not None


def name_of(conn: psycopg.Connection) -> str:
    """The database's capture slot (slot names are the server's: named by database)."""
    oid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
    return f"argus_capture_{oid.fetchone()[0]}"


def check_server(conn: psycopg.Connection) -> None:
    level, replication = conn.execute(
        """SELECT current_setting('wal_level'), rolreplication OR rolsuper
             FROM pg_roles WHERE rolname = session_user""").fetchone()
    if level != "logical":
        raise ArgusError(f"capture by a replication slot needs wal_level = logical (this "
                         f"server has {level}): ALTER SYSTEM SET wal_level = logical, then "
                         "restart the server; or track with triggers (--method trigger)")
    if not replication:
        raise ArgusError("capture by a replication slot needs a role with the REPLICATION "
                         "attribute to track the table (ALTER ROLE ... REPLICATION)")


def check_identity(conn: psycopg.Connection, oid: int, shown: str, key: list[str]) -> None:
    """The slot must carry the key of every update and delete, and the values an update
    leaves in TOAST (only the old tuple of REPLICA IDENTITY FULL has them), and every
    column: PostgreSQL's pgoutput sends no generated column (tracked anyway, every
    cycle failed naming it as dropped; a helper)."""
    generated = [name for (name,) in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated <> '' ORDER BY attnum", (oid,))]
    if generated:
        raise InvalidNameError(
            f"{shown}: column {generated[0]!r} is generated, and a replication slot does not "
            "carry generated columns: track it with triggers (--method trigger)")
    identity, toastable, columns = conn.execute(
        """SELECT c.relreplident,
                  (SELECT bool_or(w IS NULL) OR sum(w) > 1800 FROM (  -- TOAST past ~2 kB
                       SELECT CASE WHEN a.attlen > 0 OR a.attstorage = 'p' THEN 0
                                   WHEN a.atttypmod < 0 THEN NULL
                                   WHEN a.atttypid = 'numeric'::regtype
                                   THEN ((a.atttypmod - 4) >> 16) / 2 + 12
                                   WHEN a.atttypid IN ('varchar'::regtype, 'bpchar'::regtype)
                                   THEN (a.atttypmod - 4) * 4 + 4 END
                         FROM pg_attribute a
                        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS b(w)),
                  (SELECT array_agg(a.attname::text) FROM pg_index i
                     CROSS JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                    WHERE i.indrelid = c.oid AND k.ord <= i.indnkeyatts
                      AND CASE c.relreplident WHEN 'd' THEN i.indisprimary
                                              ELSE i.indisreplident END)
             FROM pg_class c WHERE c.oid = %s""", (oid,)).fetchone()
    if identity == "f":
        return
    why = ("it has columns whose values may be kept out of line (TOAST), which an update "
           "that leaves them unchanged does not log" if toastable
           else f"its replica identity is not its key ({', '.join(key)})"
           if sorted(columns or ()) != sorted(key) else None)
    if why:
        raise InvalidNameError(f"{shown}: capture by a replication slot needs the whole old "
                               f"row of each update, as {why}: ALTER TABLE {shown} REPLICA "
                               "IDENTITY FULL; or track with triggers (--method trigger)")


def ensure(conn: psycopg.Connection) -> bool:
    """Create the database's capture slot and its publication unless it has them; True
    if created now. Outside any transaction: a slot cannot be created by a transaction
    that has written."""
    if exists(conn):
        return False
    slot = name_of(conn)
    if conn.info.transaction_status != TransactionStatus.IDLE:
        raise ArgusError("argus track --method slot cannot run inside a transaction: the "
                         "replication slot must be created first")
    conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                 "WHERE slot_name = %s AND NOT active", (slot,))  # left by a failed track
    # the publication before the slot: pgoutput looks it up as of each change it decodes
    conn.execute(sql.SQL("DROP PUBLICATION IF EXISTS {}").format(sql.Identifier(PUBLICATION)))
    conn.execute(sql.SQL("CREATE PUBLICATION {}").format(sql.Identifier(PUBLICATION)))
    try:
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    except psycopg.errors.ObjectNotInPrerequisiteState as exc:  # max_replication_slots
        raise ArgusError(f"cannot create the capture slot: {exc}") from None
    return True


def drop_unused(conn: psycopg.Connection) -> None:
    """Drop the database's capture slot and publication once no table is tracked by
    them (a slot keeps WAL until read). Only after the catalog's change committed: a
    slot's drop is not transactional."""
    if conn.info.transaction_status == TransactionStatus.IDLE and not exists(conn):
        conn.execute(sql.SQL("DROP PUBLICATION IF EXISTS {}").format(
            sql.Identifier(PUBLICATION)))
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE slot_name = %s", (name_of(conn),))


def capture(conn: psycopg.Connection, oid: int, source_id: sql.Identifier,
            schema: StreamSchema) -> tuple[str, list[str], str]:
    """Put the source in the slot's publication (the first one creates the slot's
    reader), under the source's lock. Returns what argus_catalog.tracked keeps: the WAL
    position from which the slot's changes are the source's (the rows before it are the
    backfill's), the SQL that moves its changes into the inbox, and its columns' types
    as the slot describes them (argus.read_capture checks them)."""
    if not exists(conn):
        slot = name_of(conn)
        conn.execute(render("stream/capture_slot_function", function=READER,
                            slot=sql.Literal(slot), publication=sql.Literal(PUBLICATION)))
        owner = roles.owner_role(conn)
        if owner:
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {}(pg_lsn, pg_lsn) TO {}").format(
                READER, sql.Identifier(owner)))
        conn.execute("""INSERT INTO argus_catalog.capture_slot (slot, publication, reader, applied)
                        VALUES (%s, %s, %s, pg_current_wal_lsn())""",
                     (slot, PUBLICATION, READER.as_string(conn)))
    conn.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLE {}").format(
        sql.Identifier(PUBLICATION), source_id))
    key = schema.primary_key

    def value(column: str, pg_type: str, tuple_: str) -> sql.Composed:
        return sql.SQL("({} ->> {})::{}").format(sql.Identifier("c", tuple_),
                                                 sql.Literal(column), sql.SQL(pg_type))

    values = sql.SQL(", ").join(  # a 'd' (x.k = 1) holds the old key alone
        sql.SQL("CASE x.k WHEN 1 THEN {} ELSE {} END").format(value(c, t, "old"),
                                                             value(c, t, "new"))
        if c in key else sql.SQL("CASE x.k WHEN 2 THEN {} END").format(value(c, t, "new"))
        for c, t in schema.columns)

    def key_of(tuple_: str) -> sql.Composed:
        return sql.SQL(", ").join(sql.SQL("{} ->> {}").format(sql.Identifier("c", tuple_),
                                                              sql.Literal(k)) for k in key)

    name = schema.name
    apply = render("stream/capture_slot_apply", inbox=stream_inbox(name),
                   columns=cols(schema.column_names), values=values, old_key=key_of("old"),
                   new_key=key_of("new"))
    start, types = conn.execute(
        """SELECT pg_current_wal_lsn(), jsonb_object_agg(attname,
                  atttypid::bigint || '/' || atttypmod)::text
             FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped""",
        (oid,)).fetchone()
    truncate = tables.truncate_changes(name, key)
    return start, [apply.as_string(conn), truncate.as_string(conn)], types


def untrack(conn: psycopg.Connection, oid: int, source_id: sql.Identifier | None) -> None:
    """The changes the slot holds go into the inboxes first (as a cycle would read them,
    under the cycle's lock, as the owner: the session may be a superuser's, and the
    owner role's members can change argus.read_capture), with the source locked so that
    none comes after; unless they cannot be read (the slot is another database's or lost
    WAL, the source's columns changed, a value fails its type): then the table's are
    left, and the others' read if they can be."""
    if source_id is not None:
        conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(source_id))
    conn.execute(LOCK_CYCLES)
    with roles.as_owner(conn):
        for _ in range(2):
            try:
                with conn.transaction():
                    conn.execute("SELECT argus.read_capture()")
                break
            except psycopg.Error:
                conn.execute("DELETE FROM argus_catalog.tracked WHERE source = %s", (oid,))
    if source_id is not None:
        conn.execute(sql.SQL("ALTER PUBLICATION {} DROP TABLE {}").format(
            sql.Identifier(PUBLICATION), source_id))


def forget_if_unused(conn: psycopg.Connection) -> None:
    """Once no table is tracked by the slot: its reader and its catalog row go (the slot
    and the publication after the commit, drop_unused)."""
    if conn.execute("SELECT 1 FROM argus_catalog.tracked WHERE method = 'slot'"
                    ).fetchone() is None:
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}(pg_lsn, pg_lsn)").format(READER))
        conn.execute("DELETE FROM argus_catalog.capture_slot")
