"""Every internal name argus puts in PostgreSQL, and the rules for user-chosen names.

Internal objects live in their own schemas so that a user's tables never collide with
them, and node tables are named by node id so that no user name ever reaches the
63-byte identifier limit through us.
"""

from __future__ import annotations

import re

from psycopg import sql

from .errors import InvalidNameError

MAX_IDENTIFIER_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1; longer names are silently truncated

CATALOG_SCHEMA = "argus_catalog"  # the catalog tables (versioned DDL in catalog/)
API_SCHEMA = "argus"  # views and functions meant for psql users
STREAMS_SCHEMA = "argus_streams"  # stream histories, exactly the declared columns
INBOX_SCHEMA = "argus_inbox"  # where loaders (psql, COPY, Spark) write new rows
MIGRATING = "argus: migrating "  # application_name of a session migrating a query
NETWORK_SCHEMA = "argus_net"  # history and delta tables of the network's nodes
RESULTS_SCHEMA = "argus_results"  # one view per query: its current answer
CHANGES_SCHEMA = "argus_changes"  # one view per query: the last cycle's signed changes
STAGING_SCHEMA = "argus_staging"  # per-load tables Spark writes before the load commits
LOG_SCHEMA = "argus_log"  # one table per subscribed query: its changes by position

SCHEMAS = (API_SCHEMA, CATALOG_SCHEMA, STREAMS_SCHEMA, INBOX_SCHEMA, NETWORK_SCHEMA,
           RESULTS_SCHEMA, CHANGES_SCHEMA, STAGING_SCHEMA, LOG_SCHEMA)

SIGN = "argus_sign"  # +1 insert / -1 retraction, on every delta table and changes view
RESERVED_PREFIX = "argus_"  # user columns may not start with it, so SIGN never collides
STANDARD_ALIAS = "t{}"  # standard table aliases (ARGUS's STA): t1, t2, ... in node SQL

TIME_TYPES = ("date", "timestamp without time zone", "timestamp with time zone")  # event times

# The cycle lock, held by cycles, registrations and drops until they commit, so that none
# of them ever overlaps another on the same database: a lock on a table of argus's
# owner, which only the owner's sessions may take. (It was an advisory lock, which takes
# no privilege: any role that could connect held it and stopped every cycle; a helper.)
LOCK_CYCLES = "LOCK TABLE argus_catalog.cycle_lock IN EXCLUSIVE MODE"

_NAME = re.compile(r"[a-z_][a-z0-9_]*")

# PostgreSQL's reserved key words (pg_get_keywords(), categories R and T): as stream or
# column names they would need quotes in every query, so argus refuses them. (A query's
# name is only ever read schema-qualified, argus_results.<name>, where any word is a name.)
RESERVED_WORDS = frozenset("""
    all analyse analyze and any array as asc asymmetric authorization binary both case cast
    check collate collation column concurrently constraint create cross current_catalog
    current_date current_role current_schema current_time current_timestamp current_user
    default deferrable desc distinct do else end except false fetch for foreign freeze from
    full grant group having ilike in initially inner intersect into is isnull join lateral
    leading left like limit localtime localtimestamp natural not notnull null offset on only
    or order outer overlaps placing primary references returning right select session_user
    similar some symmetric table tablesample then to trailing true union unique user using
    variadic verbose when where window with""".split())


def fold(name: str) -> str:
    """Fold a name the way PostgreSQL folds an unquoted identifier."""
    return name.lower() if isinstance(name, str) else name


def check_name(name: object, what: str) -> str:
    """Validate a user-chosen name and return it folded to lower case.

    Names must be plain SQL identifiers so that they read the same in psql with or
    without quotes.

    >>> check_name("BigTransfers", "query")
    'bigtransfers'
    """
    if not isinstance(name, str) or not name:
        raise InvalidNameError(f"{what} name must be a non-empty string, got {name!r}")
    folded = fold(name)
    if not _NAME.fullmatch(folded):
        raise InvalidNameError(
            f"invalid {what} name {name!r}: use letters, digits and underscores, "
            "starting with a letter or underscore")
    if folded in RESERVED_WORDS and what != "query":
        raise InvalidNameError(f"invalid {what} name {name!r}: a reserved word of SQL, which "
                               "every query would have to quote; choose another name")
    if len(folded.encode()) > MAX_IDENTIFIER_BYTES:
        raise InvalidNameError(f"invalid {what} name {name!r}: longer than "
                         f"{MAX_IDENTIFIER_BYTES} bytes (PostgreSQL's identifier limit)")
    if folded.startswith(RESERVED_PREFIX) or folded.startswith("pg_"):
        raise InvalidNameError(f"invalid {what} name {name!r}: names starting with "
                         f"'{RESERVED_PREFIX}' or 'pg_' are reserved")
    return folded


def std_alias(i: int) -> str:
    return STANDARD_ALIAS.format(i)


def node_delta(node_id: int) -> sql.Identifier:
    return sql.Identifier(NETWORK_SCHEMA, f"n{node_id}_delta")


def stream_history(stream: str) -> sql.Identifier:
    return sql.Identifier(STREAMS_SCHEMA, stream)


def stream_inbox(stream: str) -> sql.Identifier:
    return sql.Identifier(INBOX_SCHEMA, stream)


def results_view(query: str) -> sql.Identifier:
    return sql.Identifier(RESULTS_SCHEMA, query)


def changes_view(query: str) -> sql.Identifier:
    return sql.Identifier(CHANGES_SCHEMA, query)


def change_log(query: str) -> sql.Identifier:
    return sql.Identifier(LOG_SCHEMA, query)
