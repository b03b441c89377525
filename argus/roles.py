"""Roles and privileges, the way PostgreSQL's trusted extensions do it.

Every argus object of a database belongs to one NOLOGIN owner role,
`argus_d<database oid>_<tag>_owner` (the tag is random, so that a database created
later with a reused oid never inherits the roles of a dropped one); the role that set
argus up is made a member of it. Three NOLOGIN group roles beside it carry what other
roles may do, granted with `grant`:
- reader: every query's answer and changes, and the catalog views (`--query Q`: only
  Q's two views; `--stream S`: S's history, which registering a query over S needs);
- writer: INSERT/COPY into every inbox (`--stream S`: S's), loads with an id, cycles;
- registrar: create streams, register and drop queries — as requests that the owner's
  processes carry out (argus.requests), since argus code is written only by them.
No role is given anything on the catalog, the network or the histories, and PUBLIC
nothing at all. Cycles run as the owner (argus.run_cycle is SECURITY DEFINER with a
pinned search_path), running only code the owner's processes wrote.

A role that cannot create roles (neither superuser nor CREATEROLE) installs argus
without them: it owns everything, and `grant` says what is missing.
"""

from __future__ import annotations

import contextlib
import secrets
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
from psycopg import sql

from .errors import (ArgusError, CatalogError, PermissionDeniedError, UnknownQueryError,
                     UnknownStreamError)
from .names import LOCK_CYCLES, SCHEMAS, check_name

GROUPS = ("reader", "writer", "registrar")


@dataclass(frozen=True)
class Session:
    version: int
    catalog_code: str
    code_version: int
    prefix: str | None
    owner: bool  # the session's role may act as the owner of argus's objects


def session(conn: psycopg.Connection) -> Session | None:
    """What argus knows of this session's role; None where argus is not installed (or
    was installed before roles)."""
    try:
        with conn.transaction():
            row = conn.execute("SELECT * FROM argus.session_info()").fetchone()
    except (psycopg.errors.UndefinedFunction, psycopg.errors.InvalidSchemaName,
            psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
        return None
    except psycopg.errors.InsufficientPrivilege:
        raise PermissionDeniedError(
            f"role {conn.info.user!r} has no argus privileges in database "
            f"{conn.info.dbname!r}: its owner grants them (argus grant reader|writer|"
            "registrar ROLE)") from None
    return Session(*row)


_OWNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def owner_role(conn: psycopg.Connection) -> str | None:
    """The owner role of argus's objects (None: argus has no roles here, yet)."""
    if conn not in _OWNERS:
        try:
            with conn.transaction():
                (prefix,) = conn.execute(
                    "SELECT role_prefix FROM argus_catalog.settings").fetchone()
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn,
                psycopg.errors.InvalidSchemaName):
            return None  # before catalog 8
        if prefix is None:
            return None
        _OWNERS[conn] = f"{prefix}_owner"
    return _OWNERS[conn]


def become_owner(conn: psycopg.Connection) -> None:
    """In the current transaction, act as the owner role, so that the objects created
    are the owner's (SET LOCAL: the session's role is back at commit or rollback)."""
    owner = owner_role(conn)
    if owner is not None:
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(owner)))


@contextlib.contextmanager
def as_owner(conn: psycopg.Connection) -> Iterator[None]:
    """Within the block, act as the owner role (become_owner); the session's role of
    before it after (SET LOCAL, in the caller's transaction)."""
    (role,) = conn.execute("SELECT current_user").fetchone()
    become_owner(conn)
    yield
    conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))


def setup(conn: psycopg.Connection) -> str | None:
    """Create the database's roles and give the owner role every argus object, once;
    the role prefix (None if this session's role cannot create roles)."""
    if owner_role(conn) is not None:
        return owner_role(conn)[:-len("_owner")]
    (can,) = conn.execute("SELECT rolsuper OR rolcreaterole FROM pg_roles "
                          "WHERE rolname = current_user").fetchone()
    if not can:
        return None
    with conn.transaction():
        conn.execute(LOCK_CYCLES)
        (prefix,) = conn.execute("SELECT role_prefix FROM argus_catalog.settings").fetchone()
        if prefix is None:
            (oid,) = conn.execute("SELECT oid FROM pg_database "
                                  "WHERE datname = current_database()").fetchone()
            prefix = f"argus_d{oid}_{secrets.token_hex(3)}"
            owner = sql.Identifier(f"{prefix}_owner")
            # on Citus the owner logs in: Citus reaches the workers as the role running
            # the statement (argus.citus)
            citus = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'"
                                 ).fetchone() is not None
            for group in ("owner", *GROUPS):
                conn.execute(sql.SQL("CREATE ROLE {} {}").format(
                    sql.Identifier(f"{prefix}_{group}"),
                    sql.SQL("LOGIN" if citus and group == "owner" else "NOLOGIN")))
            conn.execute(sql.SQL("GRANT {} TO CURRENT_USER").format(owner))
            _give_everything(conn, f"{prefix}_owner")
            for schema, privilege, group in (("argus_results", "SELECT", "reader"),
                                            ("argus_changes", "SELECT", "reader"),
                                            ("argus_inbox", "INSERT", "writer")):
                conn.execute(sql.SQL(
                    "ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA {} GRANT {} ON TABLES "
                    "TO {}").format(owner, sql.Identifier(schema), sql.SQL(privilege),
                                    sql.Identifier(f"{prefix}_{group}")))
            conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} REVOKE EXECUTE ON "
                                 "FUNCTIONS FROM PUBLIC").format(owner))
            conn.execute("UPDATE argus_catalog.settings SET role_prefix = %s", (prefix,))
            conn.execute("SELECT argus.apply_privileges()")
    _OWNERS[conn] = f"{prefix}_owner"
    return prefix


def _give_everything(conn: psycopg.Connection, owner: str) -> None:
    """ALTER ... OWNER TO the owner role, for argus's schemas and all they hold (a
    table's indexes, sequences and row type follow it)."""
    statements = conn.execute(
        """SELECT format('ALTER SCHEMA %%I OWNER TO %%I', nspname, %(owner)s::text)
             FROM pg_namespace WHERE nspname = ANY(%(schemas)s)
           UNION ALL
           SELECT format('ALTER %%s %%I.%%I OWNER TO %%I',
                         CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                        WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                         n.nspname, c.relname, %(owner)s::text)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ANY(%(schemas)s) AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
              AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid
                                AND d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i'))
           UNION ALL
           SELECT format('ALTER ROUTINE %%s OWNER TO %%I', p.oid::regprocedure, %(owner)s::text)
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = ANY(%(schemas)s)""",
        {"schemas": list(SCHEMAS), "owner": owner}).fetchall()
    for (statement,) in statements:  # every name quoted by format(%I) and regprocedure
        conn.execute(statement)


def drop_database(admin_dsn: str, name: str) -> None:
    """DROP DATABASE (if it exists) and the argus roles no other database uses any more
    (a database cloned from another shares its roles). `admin_dsn`: a database of the
    same server, as a role that may drop both."""
    from psycopg.conninfo import make_conninfo

    prefix = None
    try:
        with psycopg.connect(make_conninfo(admin_dsn, dbname=name), connect_timeout=5) as conn:
            prefix = conn.execute("SELECT role_prefix FROM argus_catalog.settings").fetchone()[0]
    except psycopg.Error:
        pass  # no such database, no argus in it, or one from before roles
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        # a logical slot (argus track --method slot) keeps its database from being dropped
        admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                      "WHERE database = %s", (name,))
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        for group in (*GROUPS, "owner") if prefix else ():
            try:
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(
                    sql.Identifier(f"{prefix}_{group}")))
            except psycopg.errors.DependentObjectsStillExist:
                pass  # still used by a database cloned from this one


# -- grants ------------------------------------------------------------------------------

def _prefix(conn: psycopg.Connection) -> str:
    owner = owner_role(conn)
    if owner is None:
        raise CatalogError(
            "this database's argus has no roles: the role that installed it could not "
            "create roles. Connect once as a superuser or a role with CREATEROLE (argus "
            "init) to set them up")
    return owner[:-len("_owner")]


def _checked(conn: psycopg.Connection, group: str, role: str, query: str | None,
             stream: str | None) -> tuple[str | None, str | None]:
    """The grant's query and stream names as argus folds them, once the grant makes
    sense and what it names exists."""
    query = None if query is None else check_name(query, "query")
    stream = None if stream is None else check_name(stream, "stream")
    if group not in GROUPS:
        raise ArgusError(f"unknown group {group!r} (groups: {', '.join(GROUPS)})")
    if query is not None and stream is not None:
        raise ArgusError("a grant names a query or a stream, not both")
    if query is not None and group != "reader":
        raise ArgusError("only a reader is granted by query")
    if stream is not None and group == "registrar":
        raise ArgusError("a registrar is granted for the whole database, not by stream")
    if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        raise ArgusError(f"unknown role {role!r}")
    if query is not None and not conn.execute(
            "SELECT 1 FROM argus_catalog.queries WHERE name = %s", (query,)).fetchone():
        raise UnknownQueryError(f"unknown query {query!r}")
    if stream is not None and not conn.execute(
            "SELECT 1 FROM argus_catalog.streams WHERE name = %s", (stream,)).fetchone():
        raise UnknownStreamError(f"unknown stream {stream!r}")
    return query, stream


def grant(conn: psycopg.Connection, group: str, role: str, query: str | None = None,
          stream: str | None = None) -> None:
    """Let `role` read (a query, a stream's history, or all queries), write (a stream,
    or all) or register."""
    prefix = _prefix(conn)
    query, stream = _checked(conn, group, role, query, stream)
    with conn.transaction():
        if query is None and stream is None:
            conn.execute(sql.SQL("GRANT {} TO {}").format(
                sql.Identifier(f"{prefix}_{group}"), sql.Identifier(role)))
        else:
            conn.execute("INSERT INTO argus_catalog.grants (kind, role, query, stream) "
                         "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                         (group, role, query, stream))
            become_owner(conn)
            conn.execute("SELECT argus.apply_privileges()")


def revoke(conn: psycopg.Connection, group: str, role: str, query: str | None = None,
           stream: str | None = None) -> None:
    prefix = _prefix(conn)
    query, stream = _checked(conn, group, role, query, stream)
    with conn.transaction():
        if query is None and stream is None:
            conn.execute(sql.SQL("REVOKE {} FROM {}").format(
                sql.Identifier(f"{prefix}_{group}"), sql.Identifier(role)))
            return
        conn.execute("DELETE FROM argus_catalog.grants WHERE kind = %s AND role = %s AND "
                     "query IS NOT DISTINCT FROM %s AND stream IS NOT DISTINCT FROM %s",
                     (group, role, query, stream))
        become_owner(conn)
        forget(conn, role, query=query, stream=stream, group=group)
        if stream is not None and group == "reader":
            _withdraw_own_queries(conn, role)


def _withdraw_own_queries(conn: psycopg.Connection, role: str) -> None:
    """A registrar reads the queries it registered (argus.requests grants it) while it
    may read every stream they read: a stream taken from it takes those queries too,
    which its owner may grant it again by name."""
    for (query,) in conn.execute(
            """SELECT q.name FROM argus_catalog.queries q
                JOIN argus_catalog.grants g
                  ON g.kind = 'reader' AND g.role = q.registered_by AND g.query = q.name
               WHERE q.registered_by = %(role)s AND EXISTS (
                     SELECT FROM argus_catalog.query_nodes qn
                       JOIN argus_catalog.streams st USING (node_id)
                      WHERE qn.query_id = q.query_id
                        AND NOT has_table_privilege(%(role)s,
                                format('argus_streams.%%I', st.name), 'SELECT'))""",
            {"role": role}).fetchall():
        conn.execute("DELETE FROM argus_catalog.grants WHERE kind = 'reader' AND role = %s "
                     "AND query = %s", (role, query))
        forget(conn, role, query=query)


def forget(conn: psycopg.Connection, role: str, *, query: str | None = None,
           stream: str | None = None, group: str = "reader") -> None:
    """Take back what a single grant gave."""
    who = sql.Identifier(role)
    if query is not None:
        conn.execute(sql.SQL("REVOKE ALL ON {}, {} FROM {}").format(
            sql.Identifier("argus_results", query), sql.Identifier("argus_changes", query), who))
        if conn.execute("SELECT to_regclass(%s) IS NOT NULL", (
                sql.Identifier("argus_log", query).as_string(conn),)).fetchone()[0]:
            conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(
                sql.Identifier("argus_log", query), who))  # (its subscription log)
    elif group == "reader":
        conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(
            sql.Identifier("argus_streams", stream), who))
    else:
        conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(
            sql.Identifier("argus_inbox", stream), who))


def group_roles(owner: str) -> dict[str, str]:
    """argus's group roles by group (owner included), from the owner role's name."""
    prefix = owner[:-len("_owner")]
    return {group: f"{prefix}_{group}" for group in ("owner", *GROUPS)}


def privileges(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    """Who has what: (role, group, on what)."""
    owner = owner_role(conn)
    if owner is None:
        return []
    names = {"prefix": owner[:-len("_owner")], **group_roles(owner)}
    rows = conn.execute(
        """SELECT m.rolname, substr(g.rolname, length(%(prefix)s) + 2),
                  CASE g.rolname WHEN %(owner)s THEN 'everything'
                                 WHEN %(reader)s THEN 'every query'
                                 WHEN %(writer)s THEN 'every stream'
                                 ELSE 'streams and queries, by request' END
             FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid
             JOIN pg_roles m ON m.oid = a.member
            WHERE g.rolname IN (%(owner)s, %(reader)s, %(writer)s, %(registrar)s)
           UNION ALL
           SELECT role, kind, coalesce('query ' || query, 'stream ' || stream)
             FROM argus_catalog.grants
            ORDER BY 1, 2, 3""", names).fetchall()
    return [tuple(r) for r in rows]
