"""Create and upgrade the system catalog from catalog/.

A new database gets the catalog's tables from catalog/schema.sql (version 37: the
files of versions 1 to 37 squashed into one); later versions change them through files
named NNN_description.sql (038 on), applied in order, each in the transaction that
records its version; they hold tables only. Functions and views are defined once, as
they are now, in catalog/functions.sql and catalog/views.sql, applied after the
numbered files, whenever one was applied or their text changed. All under the cycle
lock, so that two processes never race.
"""

from __future__ import annotations

import hashlib
import re

import psycopg
from psycopg import sql

from . import roles, settings
from .errors import CatalogError
from .names import CATALOG_SCHEMA, LOCK_CYCLES
from .nodes import JOINS, KINDS, LOADED, SELECTS
from .abi import SLOTS
from .resources import resource_dir

_FILE = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
SQUASHED = 37  # the version catalog/schema.sql creates


def schema() -> str:
    return (resource_dir("catalog") / "schema.sql").read_text()


def migrations() -> list[tuple[int, str]]:
    """The numbered files after the squashed schema: (version, DDL), in order."""
    found = []
    for path in sorted(resource_dir("catalog").iterdir()):
        match = _FILE.match(path.name)
        if match:
            found.append((int(match.group(1)), path.read_text()))
    return found


CODE_FILES = ("functions.sql", "views.sql")


def generated() -> str:
    """The functions through which the catalog's SQL reads what Python defines once:
    argus.kinds(trait), the node kinds with a trait (argus.nodes.base.Kind), so that
    the SQL names no kind (`n.kind <> ALL(argus.kinds('loaded'))`; IMMUTABLE: folded
    into a constant where it is planned); argus.cycle_lock() and argus.try_cycle_lock(),
    the cycle lock (argus.names.LOCK_CYCLES); argus.program_slots(), the names of the cycle
    program's slots in their order (argus.abi.SLOTS: argus.fill_program); the node
    kinds a node may have (nodes.kind's CHECK); and the settings' defaults
    (argus.settings.SETTINGS)."""
    cases = sql.SQL(" ").join(
        sql.SQL("WHEN {} THEN ARRAY[{}]::text[]").format(
            sql.Literal(trait), sql.SQL(", ").join(map(sql.Literal, names)))
        for trait, names in (("loaded", LOADED), ("selects", SELECTS), ("joins", JOINS)))
    lock = sql.SQL(LOCK_CYCLES)
    slots = sql.SQL(", ").join(map(sql.Literal, SLOTS))
    kinds = sql.SQL(", ").join(map(sql.Literal, sorted(KINDS)))
    return sql.SQL(
        "CREATE OR REPLACE FUNCTION argus.kinds(trait text) RETURNS text[]\n"
        "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE trait {cases} END $$;\n"
        "CREATE OR REPLACE FUNCTION argus.cycle_lock() RETURNS void\n"
        "LANGUAGE plpgsql AS $$ BEGIN {lock}; END $$;\n"
        "CREATE OR REPLACE FUNCTION argus.try_cycle_lock() RETURNS boolean\n"
        "LANGUAGE plpgsql AS $$ BEGIN {lock} NOWAIT; RETURN true;\n"
        "EXCEPTION WHEN lock_not_available THEN RETURN false; END $$;\n"
        "CREATE OR REPLACE FUNCTION argus.program_slots() RETURNS text[]\n"
        "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY[{slots}]::text[] $$;\n"
        "ALTER TABLE argus_catalog.nodes DROP CONSTRAINT IF EXISTS nodes_kind_check,\n"
        "    ADD CONSTRAINT nodes_kind_check CHECK (kind = ANY (ARRAY[{kinds}]::text[]));\n"
    ).format(cases=cases, lock=lock, slots=slots, kinds=kinds).as_string(None) \
        + settings.column_defaults().as_string(None)


def code() -> tuple[str, str]:
    """(md5, text) of the functions and views, as this argus defines them."""
    text = generated() + "\n".join(
        (resource_dir("catalog") / name).read_text() for name in CODE_FILES)
    return hashlib.md5(text.encode()).hexdigest(), text


def installed_code(conn: psycopg.Connection) -> str | None:
    try:
        with conn.transaction():
            row = conn.execute("SELECT catalog_code FROM argus_catalog.program_state"
                               ).fetchone()
    except psycopg.errors.UndefinedTable:  # (a catalog before version 38)
        return None
    return row[0] if row else None


def latest_version() -> int:
    return max([SQUASHED] + [version for version, _ in migrations()])


def installed_version(conn: psycopg.Connection) -> int | None:
    exists = conn.execute("SELECT to_regclass(%s)",
                          (f"{CATALOG_SCHEMA}.schema_version",)).fetchone()
    if exists is None or exists[0] is None:
        return None
    row = conn.execute(sql.SQL("SELECT max(version) FROM {}").format(
        sql.Identifier(CATALOG_SCHEMA, "schema_version"))).fetchone()
    return row[0] if row else None


# Held while no catalog has the cycle lock's table yet (pg_advisory_xact_lock).
BOOTSTRAP_LOCK = (0x41524755, 0x53)  # "ARGU", "S"


def migrate(conn: psycopg.Connection) -> int:
    """Bring the catalog to the latest version; return the number of files applied."""
    digest, text = code()
    if installed_version(conn) == latest_version() and installed_code(conn) == digest:
        return 0  # the common case, checked without waiting for a running cycle
    with conn.transaction():
        if conn.execute("SELECT to_regclass('argus_catalog.cycle_lock')").fetchone()[0]:
            conn.execute(LOCK_CYCLES)
        else:  # (no catalog yet, or one from before the lock's table: two installers)
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", BOOTSTRAP_LOCK)
        roles.become_owner(conn)  # new objects are the owner role's
        current = installed_version(conn) or 0
        if current > latest_version():
            raise CatalogError(
                f"this database's argus catalog is version {current}, newer than this "
                f"argus understands ({latest_version()}): upgrade argus")
        applied = 0
        if 0 < current < SQUASHED:
            raise CatalogError(
                f"this database's argus catalog is version {current}, made by an argus "
                f"older than its first release (catalog version {SQUASHED}), which cannot "
                f"upgrade it: drop its argus schemas (argus_catalog, argus, argus_streams, "
                f"argus_inbox, argus_net, argus_results, argus_changes, argus_staging, "
                f"argus_log) or use a new database, and install argus again")
        fresh = current == 0
        if fresh:
            conn.execute(schema())  # a reviewed file of our own, no parameters
            conn.execute(sql.SQL("INSERT INTO {} (version) VALUES (%s)").format(
                sql.Identifier(CATALOG_SCHEMA, "schema_version")), (SQUASHED,))
            current, applied = SQUASHED, 1
        for version, ddl in migrations():
            if version <= current:
                continue
            conn.execute(ddl)  # a reviewed file of our own, no parameters
            conn.execute(sql.SQL("INSERT INTO {} (version) VALUES (%s)").format(
                sql.Identifier(CATALOG_SCHEMA, "schema_version")), (version,))
            applied += 1
        if applied or installed_code(conn) != digest:  # a migration may drop views
            conn.execute(text)  # reviewed files of our own, no parameters
            if fresh:  # the settings row, with the defaults just set
                conn.execute("INSERT INTO argus_catalog.settings (time_zone) "
                             "VALUES (current_setting('TimeZone'))")
                conn.execute("INSERT INTO argus_catalog.program_state DEFAULT VALUES")
            # the program is assembled anew by the new code (argus.assemble_program)
            conn.execute("UPDATE argus_catalog.program_state SET catalog_code = %s, "
                         "program_stale = program_stale OR program_frame IS NOT NULL, "
                         "source_fingerprint = NULL", (digest,))  # (argus.lean)
            conn.execute("UPDATE argus_catalog.nodes n "
                         "SET one_line = argus.code_on_one_line(n)")  # (argus.one_line may be new)
            conn.execute("SELECT argus.apply_privileges()")  # views were created anew
            applied += 1
        return applied
