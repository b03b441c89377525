"""Change capture: an ordinary table that applications already write becomes an argus
table (argus.tables), without changing the applications.

`track` creates the table with the source's columns and key, copies the source's rows
into its inbox as inserts and puts statement-level triggers with transition tables on
the source (sql_templates/stream/track.sql), in one transaction holding a lock that
keeps writers out meanwhile: no change is missed or counted twice. From then on each
statement on the source writes its changes into the inbox in the writer's transaction.
`untrack` removes the triggers; the table and its queries stay.

With method "slot" the changes come from a logical replication slot instead
(wal_level = logical): the writers pay nothing but their WAL, and each cycle reads the
changes committed since the last one (argus.read_capture in catalog/functions.sql,
through the reader in sql_templates/stream/capture_slot_function.sql). The slot is
created before the table's lock is taken (a slot waits for running transactions), the
position recorded under that lock separates the backfill from the slot's changes.
"""

from __future__ import annotations

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from . import roles, streams
from .errors import ArgusError, DuplicateNameError, InvalidNameError, UnknownStreamError
from .frontend.analyze import StreamSchema
from .names import CYCLE_LOCK, INBOX_SCHEMA, check_name, stream_history, stream_inbox
from .nodes.base import cols
from .nodes.stream import key_join
from .templates import render

METHODS = ("trigger", "slot")
PUBLICATION = "argus_capture"
TRIGGERS = ("argus_track_insert", "argus_track_update", "argus_track_delete",
            "argus_track_truncate")


def _function(name: str) -> sql.Identifier:
    """The capture function, beside the table's inbox (a name no table's check takes)."""
    return sql.Identifier(INBOX_SCHEMA, f"track {name}")


READER = sql.Identifier(INBOX_SCHEMA, "capture slot")  # the slot's reader


def _has_slot(conn: psycopg.Connection) -> bool:
    return conn.execute("SELECT 1 FROM argus_catalog.capture_slot").fetchone() is not None


def _slot_name(conn: psycopg.Connection) -> str:
    """The database's capture slot (slot names are the server's: named by database)."""
    oid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
    return f"argus_capture_{oid.fetchone()[0]}"


def _source(conn: psycopg.Connection, source: str) -> tuple[int, sql.Identifier, str]:
    """(oid, qualified identifier, display name) of the table to track."""
    row = conn.execute(
        """SELECT c.oid, n.nspname, c.relname, c.relkind, c.relpersistence,
                  c.relispartition OR EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.oid),
                  EXISTS (SELECT FROM pg_inherits i WHERE i.inhparent = c.oid)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.oid = to_regclass(%s)""", (source,)).fetchone()
    if row is None:
        raise UnknownStreamError(f"no table {source!r} to track (name an existing table, "
                                 "e.g. public.orders)")
    oid, schema, table, kind, persistence, child, parent = row
    shown = f"{schema}.{table}"
    if kind == "p" or parent or child:
        what = ("partitioned" if kind == "p" else "a partition or an inheritance child"
                if child else "an inheritance parent")
        raise InvalidNameError(f"{shown} is {what}: a statement on a partition (or a child) "
                               "fires no trigger of its parent, nor the parent's of its "
                               "partitions, so argus would miss changes; track a plain table")
    if kind != "r":
        raise InvalidNameError(f"{shown} is not a table (only a table's changes can be tracked)")
    if persistence == "t":
        raise InvalidNameError(f"{shown} is a temporary table: other sessions never see it")
    if schema.startswith("argus_"):
        raise InvalidNameError(f"{shown} is argus's own table; track an application's table")
    return oid, sql.Identifier(schema, table), shown


def _key(conn: psycopg.Connection, oid: int, shown: str) -> list[str]:
    """The source's primary key, else its replica identity index; refused without."""
    row = conn.execute(
        """SELECT i.indimmediate, array_agg(a.attname ORDER BY k.ord)
             FROM pg_index i
             CROSS JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            WHERE i.indrelid = %s AND (i.indisprimary OR i.indisreplident)
              AND k.ord <= i.indnkeyatts  -- not the INCLUDE columns
            GROUP BY i.indexrelid, i.indisprimary, i.indimmediate
            ORDER BY i.indisprimary DESC LIMIT 1""", (oid,)).fetchone()
    if row is None:
        raise InvalidNameError(
            f"{shown} has no primary key, which argus needs to follow its updates and "
            f"deletes: add one (ALTER TABLE {shown} ADD PRIMARY KEY (...)), or name a unique "
            f"index over NOT NULL columns (ALTER TABLE {shown} REPLICA IDENTITY USING INDEX "
            "...)")
    immediate, key = row
    if not immediate:
        raise InvalidNameError(f"{shown}: its primary key is DEFERRABLE, so a statement may "
                               "leave two rows with one key for a while; argus needs an "
                               "immediate key")
    return list(key)


def _columns(conn: psycopg.Connection, oid: int, shown: str) -> dict[str, str]:
    columns = {}
    for name, pg_type, not_null, collation in conn.execute(
            """SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                      CASE WHEN a.attcollation <> t.typcollation THEN c.collname END
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                 LEFT JOIN pg_collation c ON c.oid = a.attcollation
                WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
                ORDER BY a.attnum""", (oid,)):
        try:
            plain = check_name(name, "column") == name
        except InvalidNameError as exc:
            raise InvalidNameError(f"{shown}: {exc}") from None
        if not plain:
            raise InvalidNameError(f"{shown}: column {name!r} is not a plain lower-case name, "
                                   "which argus's queries could not name unquoted")
        if collation is not None:
            raise InvalidNameError(
                f"{shown}: column {name!r} has the collation {collation!r}; argus's copy would "
                "compare and sort it by the type's default, and give other answers")
        columns[name] = pg_type + (" NOT NULL" if not_null else "")
    return columns


def _check_slot_server(conn: psycopg.Connection) -> None:
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


def _check_identity(conn: psycopg.Connection, oid: int, shown: str, key: list[str]) -> None:
    """The slot must carry the key of every update and delete, and the values an update
    leaves in TOAST (only the old tuple of REPLICA IDENTITY FULL has them)."""
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


def _ensure_slot(conn: psycopg.Connection) -> bool:
    """Create the database's capture slot and its publication unless it has them; True
    if created now. Outside any transaction: a slot cannot be created by a transaction
    that has written."""
    if _has_slot(conn):
        return False
    slot = _slot_name(conn)
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


def drop_unused_slot(conn: psycopg.Connection) -> None:
    """Drop the database's capture slot and publication once no table is tracked by
    them (a slot keeps WAL until read). Only after the catalog's change committed: a
    slot's drop is not transactional."""
    if conn.info.transaction_status == TransactionStatus.IDLE and not _has_slot(conn):
        conn.execute(sql.SQL("DROP PUBLICATION IF EXISTS {}").format(
            sql.Identifier(PUBLICATION)))
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE slot_name = %s", (_slot_name(conn),))


def _slot_capture(conn: psycopg.Connection, name: str, source_id: sql.Identifier,
                  schema: StreamSchema) -> list[str]:
    """Put the source in the slot's publication (the first one creates the slot's
    reader); the SQL that moves its changes into the inbox (argus.read_capture)."""
    if not _has_slot(conn):
        slot = _slot_name(conn)
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

    apply = render("stream/capture_slot_apply", inbox=stream_inbox(name),
                   columns=cols(schema.column_names), values=values, old_key=key_of("old"),
                   new_key=key_of("new"))
    return [apply.as_string(conn), _truncate(name, key).as_string(conn)]


def _truncate(name: str, key) -> sql.Composed:
    return render("stream/capture_truncate", inbox=stream_inbox(name),
                  history=stream_history(name), key=cols(key))


def track(conn: psycopg.Connection, source: str, name: str | None = None,
          method: str = "trigger") -> StreamSchema:
    """Make the table `source` an argus table `name` (default: the source's name),
    following its changes by triggers or by a replication slot (`method`)."""
    if method not in METHODS:
        raise ArgusError(f"no capture method {method!r} (one of: {', '.join(METHODS)})")
    created = False
    if method == "slot":
        _check_slot_server(conn)
        created = _ensure_slot(conn)
    try:
        return _track(conn, source, name, method)
    except BaseException:
        if created:
            drop_unused_slot(conn)
        raise


def _track(conn: psycopg.Connection, source: str, name: str | None, method: str
           ) -> StreamSchema:
    with conn.transaction():
        session_role = conn.execute("SELECT current_user").fetchone()[0]
        oid, source_id, shown = _source(conn, source)
        name = check_name(name or shown.split(".")[-1], "table")
        taken = conn.execute("SELECT s.name FROM argus_catalog.tracked t JOIN "
                             "argus_catalog.streams s USING (stream_id) WHERE t.source = %s",
                             (oid,)).fetchone()
        if taken:
            raise ArgusError(f"{shown} is already tracked by table {taken[0]}")
        try:
            conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(source_id))
        except psycopg.errors.InsufficientPrivilege:
            raise ArgusError(f"tracking {shown} needs its owner's rights (its triggers)") from None
        key = _key(conn, oid, shown)
        if method == "slot":
            _check_identity(conn, oid, shown, key)
        spec = _columns(conn, oid, shown)
        try:
            schema = streams.create_stream(conn, name, spec, primary_key=key)
        except DuplicateNameError:
            raise DuplicateNameError(f"argus has a stream or table {name!r} already: track "
                                     f"{shown} under another name (--as NAME)") from None
        except InvalidNameError as exc:
            raise InvalidNameError(f"{shown}: {exc}") from None
        columns, inbox = list(schema.column_names), stream_inbox(name)
        start, apply_sql, types = None, None, None
        if method == "trigger":
            roles.become_owner(conn)  # the capture function runs with the owner's rights
            conn.execute(render(
                "stream/track", function=_function(name), inbox=inbox,
                columns=cols(columns), n_columns=cols(columns, "n"),
                o_columns=cols(columns, "o"), first=sql.Identifier(key[0]),
                o_join=key_join(key, "o", "n"), key=cols(key), truncate=_truncate(name, key),
                o_key_only=sql.SQL(", ").join(sql.Identifier("o", c) if c in key
                                              else sql.SQL("NULL") for c in columns)))
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(session_role)))
            conn.execute(render("stream/track_triggers", source=source_id,
                                function=_function(name)))
        else:  # as the session's role (create_stream acted as the owner): it reads the slot
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(session_role)))
            apply_sql = _slot_capture(conn, name, source_id, schema)
            start, types = conn.execute(
                """SELECT pg_current_wal_lsn(), jsonb_object_agg(attname,
                          atttypid::bigint || '/' || atttypmod)::text
                     FROM pg_attribute WHERE attrelid = %s AND attnum > 0
                      AND NOT attisdropped""", (oid,)).fetchone()
        conn.execute(sql.SQL("INSERT INTO {} ({}, argus_op) SELECT {}, 'i' FROM {}").format(
            inbox, cols(columns), cols(columns), source_id))
        conn.execute("""INSERT INTO argus_catalog.tracked
                               (stream_id, source, method, start_lsn, apply_sql, columns)
                        SELECT stream_id, %s, %s, %s, %s, %s::jsonb FROM argus_catalog.streams
                         WHERE name = %s""", (oid, method, start, apply_sql, types, name))
    return streams.stream_schemas(conn)[name]


def tracked(conn: psycopg.Connection) -> dict[str, str]:
    """Each table that follows a source, and that source (or a dropped table's oid)."""
    return {name: s.source for name, s in streams.stream_schemas(conn).items() if s.source}


def untrack(conn: psycopg.Connection, name: str) -> str:
    """Stop following the source: its triggers and the capture function go; the table,
    its rows and its queries stay. Returns the source's name."""
    name = check_name(name, "table")
    with conn.transaction():
        row = conn.execute(
            """SELECT t.source, n.nspname, c.relname, t.method FROM argus_catalog.tracked t
                 JOIN argus_catalog.streams s USING (stream_id)
                 LEFT JOIN pg_class c ON c.oid = t.source
                 LEFT JOIN pg_namespace n ON n.oid = c.relnamespace WHERE s.name = %s""",
            (name,)).fetchone()
        if row is None:
            raise UnknownStreamError(f"{name!r} tracks no table")
        oid, schema, table, method = row
        shown = tracked(conn)[name]
        source_id = sql.Identifier(schema, table) if table is not None else None
        if method == "slot":
            _untrack_slot(conn, oid, source_id)
        for trigger in TRIGGERS if source_id else ():
            conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                sql.Identifier(trigger), source_id))
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}()").format(_function(name)))
        conn.execute("DELETE FROM argus_catalog.tracked WHERE source = %s", (oid,))
        if method == "slot" and conn.execute(
                "SELECT 1 FROM argus_catalog.tracked WHERE method = 'slot'").fetchone() is None:
            conn.execute(sql.SQL("DROP FUNCTION {}(pg_lsn, pg_lsn)").format(READER))
            conn.execute("DELETE FROM argus_catalog.capture_slot")
    drop_unused_slot(conn)
    return shown


def _untrack_slot(conn: psycopg.Connection, oid: int, source_id: sql.Identifier | None
                  ) -> None:
    """The changes the slot holds go into the inboxes first (as a cycle would read them,
    under the cycle's lock), with the source locked so that none comes after; unless
    they cannot be read (the slot is another database's or lost WAL, the source's
    columns changed, a value fails its type): then the table's are left, and the
    others' read if they can be."""
    if source_id is not None:
        conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(source_id))
    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", CYCLE_LOCK)
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
