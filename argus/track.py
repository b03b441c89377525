"""Change capture: an ordinary table that applications already write becomes an argus
table (argus.tables), without changing the applications.

`track` creates the table with the source's columns and key, copies the source's rows
into its inbox as inserts and puts statement-level triggers with transition tables on
the source (sql_templates/stream/track.sql), in one transaction holding a lock that
keeps writers out meanwhile: no change is missed or counted twice. From then on each
statement on the source writes its changes into the inbox in the writer's transaction.
`untrack` removes the triggers; the table and its queries stay.

With method "slot" the changes come from a logical replication slot instead
(argus.slot).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from . import roles, slot, streams, tables
from .errors import ArgusError, DuplicateNameError, InvalidNameError, UnknownStreamError
from .frontend.analyze import StreamSchema
from .names import INBOX_SCHEMA, LOCK_CYCLES, check_name, stream_history, stream_inbox
from .settings import pinned_session, user_relation
from .nodes.base import cols
from .nodes.stream import key_join
from .templates import render

METHODS = ("trigger", "slot")
TRIGGERS = ("argus_track_insert", "argus_track_update", "argus_track_delete",
            "argus_track_truncate")


def _capture_function(conn: psycopg.Connection, name: str, columns: list[str],
                      key: list[str]) -> None:
    """The trigger function that writes a tracked table's changes into its inbox
    (stream/track), made or made again, as the session's role (the owner's)."""
    conn.execute(render(
        "stream/track", function=_function(name), inbox=stream_inbox(name),
        inbox_name=sql.Literal(stream_inbox(name).as_string(conn)),
        columns=cols(columns), n_columns=cols(columns, "argus_n"),
        first=sql.Identifier(key[0]), o_join=key_join(key, "argus_o", "argus_n"),
        key=cols(key), truncate=tables.truncate_changes(name, key),
        o_key_only=sql.SQL(", ").join(sql.Identifier("argus_o", c) if c in key
                                      else sql.SQL("NULL") for c in columns)))


def refresh_captures(conn: psycopg.Connection) -> int:
    """The capture functions of the tables tracked by trigger, made again by this
    argus's template (an upgrade: an older one compared rows as `o *<> n`, and a
    table with a column n or o then refused its application's updates). How many."""
    names = [r[0] for r in conn.execute(
        "SELECT s.name FROM argus_catalog.tracked t JOIN argus_catalog.streams s "
        "USING (stream_id) WHERE t.method = 'trigger' ORDER BY s.name")]
    if names:
        schemas = streams.stream_schemas(conn)
        with conn.transaction():
            roles.become_owner(conn)
            for name in names:
                _capture_function(conn, name, list(schemas[name].column_names),
                                  list(schemas[name].primary_key))
    return len(names)


# How long `resync` waits for a writer of the table (holding the cycle lock meanwhile).
RESYNC_LOCK_TIMEOUT = "5s"


def resync(conn: psycopg.Connection, name: str, dsn: str) -> int:
    """Compare a tracked table's source with argus's rows and queue what differs as
    changes, which the next cycle claims (after a rewrite in place that no capture saw:
    ALTER TABLE … TYPE … USING). The source is read by `COPY … TO` on a second session
    (`dsn`), which plans nothing: planning a read of it runs code its owner attached to
    it (a partial index's predicate) — as argus's owner in a cycle, or as whoever
    resyncs (a superuser, told to by a cycle's warning), even through `SET ROLE` to its
    owner, which that code can `RESET` (helpers). How many changes."""
    name = check_name(name, "table")
    schema = streams.stream_schemas(conn).get(name)
    if schema is None or not schema.source:
        raise UnknownStreamError(f"{name!r} tracks no table")
    columns, key = list(schema.column_names), list(schema.primary_key)
    with conn.transaction(), pinned_session(conn):
        conn.execute(LOCK_CYCLES)
        conn.execute("SELECT set_config('lock_timeout', %s, true)", (RESYNC_LOCK_TIMEOUT,))
        try:
            changes = _resync(conn, dsn, name, columns, key)
        except psycopg.errors.LockNotAvailable:
            raise ArgusError(f"table {name}: a writer held its source or its changes past "
                             f"{RESYNC_LOCK_TIMEOUT}; nothing was compared, try again") from None
    return changes


def _resync(conn: psycopg.Connection, dsn: str, name: str, columns: list[str],
            key: list[str]) -> int:
    oid, method, stopped, nsp, rel = conn.execute(
        "SELECT t.source, t.method, t.stopped, n.nspname, c.relname "
        "FROM argus_catalog.tracked t JOIN argus_catalog.streams s USING (stream_id) "
        "LEFT JOIN pg_class c ON c.oid = t.source "
        "LEFT JOIN pg_namespace n ON n.oid = c.relnamespace WHERE s.name = %s FOR UPDATE OF t",
        (name,)).fetchone()
    if stopped:
        raise ArgusError(f"table {name} stopped following its source ({stopped}): untrack "
                         "it, then track its source again")
    if rel is None:
        raise ArgusError(f"table {name}'s source was dropped: untrack it")
    source = sql.Identifier(nsp, rel)
    # what is checked below holds until the reading: no ALTER, RENAME or policy comes
    # between (a helper changed each while resync waited for the inbox)
    conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS SHARE MODE").format(source))
    _check_source(conn, name, oid, source)
    if method == "trigger":  # no writer's change comes between the reading and the claim
        conn.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(stream_inbox(name)))
    else:  # the slot's changes before the reading are in the inbox first, none after it
        conn.execute(sql.SQL("LOCK TABLE {} IN SHARE MODE").format(source))
        with roles.as_owner(conn):  # (as a cycle reads them: slot.untrack)
            conn.execute("SELECT argus.read_capture()")
    copy = sql.Identifier("pg_temp", "argus_resync_rows")  # (the types are argus's: equal)
    conn.execute(sql.SQL("CREATE TEMPORARY TABLE {} ON COMMIT DROP AS SELECT {} FROM {} "
                         "WITH NO DATA").format(copy, cols(columns), stream_history(name)))
    with psycopg.connect(dsn, autocommit=True) as reader:
        # (its wait is bounded too: a writer queued behind this session's lock would
        # hold it unseen by PostgreSQL's deadlock check; and a policy errs, not filters)
        reader.execute("SELECT set_config('lock_timeout', %s, false), "
                       "set_config('row_security', 'off', false)", (RESYNC_LOCK_TIMEOUT,))
        with reader.cursor().copy(sql.SQL("COPY {} ({}) TO STDOUT (FORMAT binary)").format(
                source, cols(columns))) as rows, \
                conn.cursor().copy(sql.SQL("COPY {} FROM STDIN (FORMAT binary)").format(
                    copy)) as into:
            for data in rows:
                into.write(data)
    conn.execute("SELECT set_config('argus.capture', 'on', true)")  # (the key holds)
    changes = conn.execute(render(
        "stream/resync", inbox=stream_inbox(name), history=stream_history(name),
        source=copy, key=cols(key), columns=cols(columns),
        h_columns=cols(columns, "argus_h"), hl_join=key_join(key, "argus_h", "argus_l"),
        first=sql.Identifier(key[0]), s_columns=cols(columns, "argus_s"),
        e_columns=cols(columns, "argus_e"), se_join=key_join(key, "argus_s", "argus_e"),
        e_key_only=sql.SQL(", ").join(sql.Identifier("argus_e", c) if c in key
                                      else sql.SQL("NULL") for c in columns))).rowcount
    conn.execute("SELECT set_config('argus.capture', 'off', true)")
    conn.execute("UPDATE argus_catalog.tracked SET rewritten_at = NULL, filenode = "
                 "pg_relation_filenode(source), attnums = argus.column_numbers(source, %s) "
                 "WHERE source = %s", (columns, oid))
    return changes


def _check_source(conn: psycopg.Connection, name: str, oid: int, source: sql.Identifier
                  ) -> None:
    """The source, locked, is still the table tracked, whole, and of argus's types."""
    same, kind, hidden, children = conn.execute(
        "SELECT to_regclass(%s) = c.oid, c.relkind, c.relrowsecurity AND NOT "
        "(SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user), "
        "EXISTS (SELECT FROM pg_inherits i WHERE i.inhparent = c.oid) "
        "FROM pg_class c WHERE c.oid = %s", (source.as_string(conn), oid)).fetchone()
    if not same or kind != "r":
        raise ArgusError(f"table {name}'s source is no longer the table tracked: untrack it")
    if hidden:  # (COPY would read it through its policies: a query, planned)
        raise ArgusError(f"{source.as_string(conn)} has row-level security: argus resync "
                         "reads all its rows, as a superuser (or a role with BYPASSRLS) can")
    if children:  # (their rows fire none of its triggers, and COPY reads none of them)
        raise ArgusError(f"{source.as_string(conn)} has inheritance children since it was "
                         "tracked, whose rows argus does not follow: untrack it")
    changed = conn.execute(
        """SELECT h.attname FROM pg_attribute h
             LEFT JOIN pg_attribute a ON a.attrelid = %s AND a.attname = h.attname
                                     AND NOT a.attisdropped AND a.attgenerated = ''
            WHERE h.attrelid = %s::regclass AND h.attnum > 0 AND NOT h.attisdropped
              AND (a.atttypid, a.atttypmod) IS DISTINCT FROM (h.atttypid, h.atttypmod)
            ORDER BY h.attnum LIMIT 1""",
        (oid, stream_history(name).as_string(conn))).fetchone()
    if changed:
        raise ArgusError(f"table {name}: its source's column {changed[0]} was dropped, "
                         "renamed or changed type since `track`: untrack it, then track "
                         "its source again")


def _function(name: str) -> sql.Identifier:
    """The capture function, beside the table's inbox (a name no table's check takes)."""
    return sql.Identifier(INBOX_SCHEMA, f"track {name}")


def _source(conn: psycopg.Connection, source: str) -> tuple[int, sql.Identifier, str]:
    """(oid, qualified identifier, display name) of the table to track."""
    row = conn.execute(
        """SELECT c.oid, n.nspname, c.relname, c.relkind, c.relpersistence,
                  c.relispartition OR EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.oid),
                  EXISTS (SELECT FROM pg_inherits i WHERE i.inhparent = c.oid)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.oid = %s""", (user_relation(conn, source),)).fetchone()
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


def track(conn: psycopg.Connection, source: str, name: str | None = None,
          method: str = "trigger") -> StreamSchema:
    """Make the table `source` an argus table `name` (default: the source's name),
    following its changes by triggers or by a replication slot (`method`)."""
    if method not in METHODS:
        raise ArgusError(f"no capture method {method!r} (one of: {', '.join(METHODS)})")
    created = False
    if method == "slot":
        slot.check_server(conn)
        created = slot.ensure(conn)
    try:
        return _track(conn, source, name, method)
    except BaseException:
        if created:
            slot.drop_unused(conn)
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
            slot.check_identity(conn, oid, shown, key)
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
            _capture_function(conn, name, columns, list(key))
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(session_role)))
            conn.execute(render("stream/track_triggers", source=source_id,
                                function=_function(name)))
        else:  # as the session's role (create_stream acted as the owner): it reads the slot
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(session_role)))
            start, apply_sql, types = slot.capture(conn, oid, source_id, schema)
        conn.execute(sql.SQL("INSERT INTO {} ({}, argus_op) SELECT {}, 'i' FROM {}").format(
            inbox, cols(columns), cols(columns), source_id))
        conn.execute("""INSERT INTO argus_catalog.tracked
                               (stream_id, source, method, start_lsn, apply_sql, columns,
                                filenode, attnums)
                        SELECT stream_id, %s, %s, %s, %s, %s::jsonb, pg_relation_filenode(%s),
                               argus.column_numbers(%s, %s)
                          FROM argus_catalog.streams WHERE name = %s""",
                     (oid, method, start, apply_sql, types, oid, oid, columns, name))
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
            slot.untrack(conn, oid, source_id)
        for trigger in TRIGGERS if source_id else ():
            conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                sql.Identifier(trigger), source_id))
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}()").format(_function(name)))
        conn.execute("DELETE FROM argus_catalog.tracked WHERE source = %s", (oid,))
        if method == "slot":
            slot.forget_if_unused(conn)
    slot.drop_unused(conn)
    return shown
