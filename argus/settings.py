"""The database's argus settings (one row of argus_catalog.settings), read and changed
by name with their values checked, so that a typo is an error, not a silent no-op."""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Callable, Iterator
from typing import NamedTuple

import psycopg
from psycopg import sql

from .errors import SettingError


def _bool(text: object) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).lower()
    if value in ("true", "on", "yes", "1"):
        return True
    if value in ("false", "off", "no", "0"):
        return False
    raise ValueError("expected true or false")


def _choice(*options: str) -> Callable[[object], str]:
    def parse(text: object) -> str:
        if str(text) not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return str(text)
    return parse


def _positive(kind: type) -> Callable[[object], object]:
    def parse(text: object) -> object:
        value = kind(text)
        if value <= 0:
            raise ValueError("expected a positive number")
        return value
    return parse


def _text(text: object) -> str:
    if not str(text).strip():
        raise ValueError("expected a name")
    return str(text).strip()


def _fraction(text: object) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError("expected a number from 0 to 1")
    return value


_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}


BIGINT = 2**63 - 1  # (the settings' columns)


def _size(text: object, most: int = BIGINT) -> int:
    """Bytes, as a number or with PostgreSQL's units (500MB, 4GB: multiples of 1024),
    at most `most`."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    if match is None or match[2].lower() not in _UNITS \
            or "." in match[1] and _UNITS[match[2].lower()] == 1:
        raise ValueError("expected a size such as 4GB, 1.5GB, 500MB or a whole number "
                         "of bytes")
    value = int(float(match[1]) * _UNITS[match[2].lower()])
    if value <= 0:
        raise ValueError("expected a positive size")
    if value > most:
        raise ValueError(f"expected at most {most} bytes")
    return value


def _optional(parse: Callable[[object], object]) -> Callable[[object], object]:
    return lambda text: None if text is None or str(text).lower() in ("", "null", "none",
                                                                      "server") else parse(text)


def _interval(text: object) -> str:
    """An interval as PostgreSQL reads it ('1 day', '36 hours'), checked by the server."""
    return str(text)


INTERVALS = ("max_clock_lead", "keep_runs_for", "stale_staging_after", "node_timeout",
             "keep_changes")

class Setting(NamedTuple):
    """A setting: its value in a new database (the catalog's column default, generated
    from this: catalog.generated), how a value given for it is read, what it does."""

    default: object
    parse: Callable[[object], object]
    help: str


INSTALLER = "the installer's"  # time_zone's default: the zone of the session installing

# an inbox whose files (TOAST included) pass this many truncate_inbox_bytes is taken
# whole by the claim (program/inbox_large), and vacuumed where a load holds it
# (argus.tidy)
INBOX_TAKEN_WHOLE = 16


# the claim multiplies truncate_inbox_bytes by INBOX_TAKEN_WHOLE in a bigint (a helper's
# 524288TB was taken, then every cycle failed: bigint out of range)
def _inbox_size(text: object) -> int:
    return _size(text, BIGINT // INBOX_TAKEN_WHOLE)


SETTINGS: dict[str, Setting] = {
    "maintenance": Setting(
        "auto", _choice("auto", "apply", "rebuild"),
        "how signed nodes keep their histories: auto (the cheaper of applying the cycle's changes "
        "and rebuilding from the parents, by learned costs), apply, or rebuild"),
    "random_page_cost": Setting(
        1.1, _optional(_positive(float)),
        "the planner's random_page_cost inside cycles (null: the server's)"),
    "purge": Setting(
        True, _bool,
        "delete history that no windowed query can need again"),
    "plan_kept_rows": Setting(
        1000, _optional(_positive(int)),
        "run a node's statement with its plan kept for the session when its deltas hold at most "
        "this many rows together, with a second one kept up to ten times as many (null: plan "
        "every statement for its deltas at every cycle)"),
    "truncate_delta_bytes": Setting(
        4194304, _size,
        "TRUNCATE (instead of DELETE) a delta whose file grew past this (or that held over "
        "5,000 rows)"),
    "truncate_inbox_bytes": Setting(
        262144, _inbox_size,
        "take an inbox that grew by more than this since the last claim (or whose files are "
        f"{INBOX_TAKEN_WHOLE} times this) whole (locked, read in place, truncated) when no "
        "load is writing to it"),
    "unread_inbox_bytes": Setting(
        16777216, _optional(_size),
        "claim a stream that no query reads only when its inbox grew past this (its rows wait "
        "there and move the clock when claimed; null: at every cycle)"),
    "node_timeout": Setting(
        "10 minutes", _optional(_interval),
        "a cycle running past this (a registrar's query that computes for hours) isolates the "
        "query whose node was running, and runs again without it; registrars' requests run under "
        "it too (null: no limit)"),
    "max_query_state": Setting(
        268435456, _optional(_size),
        "refuse to register a query whose state PostgreSQL estimates above this many bytes, unless "
        "forced (null: no limit)"),
    "layout": Setting(
        "cost", _choice("cost", "heuristic"),
        "how new queries are laid out: cost (joins ordered by their cost per cycle, bushy trees "
        "allowed; conditional materialization: virtual_selectivity, virtual_join_growth) or "
        "heuristic (ARGUS's left-deep order, every node a table)"),
    "virtual_selectivity": Setting(
        0.3, _optional(_fraction),
        "a new selection or projection over a stream that PostgreSQL estimates to pass more than "
        "this share of the stream's rows keeps no table: it is a view of the stream (null: never)"),
    "virtual_join_growth": Setting(
        4, _optional(_positive(float)),
        "a new insert-only inner join holding more than this many times its inputs' rows together "
        "keeps no table: it is a view of their join (null: never)"),
    "state_budget": Setting(
        None, _optional(_size),
        "bytes the network's tables may hold (4GB): a new join that would take them past it is a "
        "view of its parents' join, and a query whose registration would still take them past is "
        "refused unless forced (null: no budget)"),
    "reoptimize_every": Setting(
        100, _optional(_positive(int)),
        "every this many cycles, plan each query again (incremental or re-run, and its joins) on "
        "what the cycles observed and migrate the ones that gain (null: only on argus optimize)"),
    "migration": Setting(
        "moving-state", _choice("moving-state", "jisc"),
        "how a query moves to a new layout: moving-state (its new nodes built from the states that "
        "exist, between two cycles) or jisc (its new joins completed key by key as the cycles "
        "first probe them: no pause)"),
    "migration_min_gain": Setting(
        0.3, _fraction,
        "migrate only to a layout cheaper per cycle by more than this share (hysteresis: no two "
        "layouts flap)"),
    "migration_horizon": Setting(
        100, _positive(int),
        "migrate only when the saving over this many cycles pays for building the new nodes"),
    "rerun_fallback": Setting(
        True, _bool,
        "at each re-plan, evaluate a query by re-running it when that costs less than its nodes by "
        "more than migration_min_gain, and back (argus optimize --evaluate pins a query's "
        "evaluation)"),
    "max_clock_lead": Setting(
        "1 day", _optional(_interval),
        "hold back (quarantine) rows whose event time is further ahead of the server's clock than "
        "this (null: never)"),
    "keep_runs": Setting(
        10000, _optional(_positive(int)),
        "the cycle log (argus.runs) keeps this many cycles at most (null: all)"),
    "keep_runs_for": Setting(
        "7 days", _optional(_interval),
        "the cycle log keeps the cycles of this long at most (null: all)"),
    "keep_changes": Setting(
        "1 day", _optional(_interval),
        "a subscribed query's log keeps changes this long at most, though not every consumer "
        "acknowledged them (null: until they all did)"),
    "time_zone": Setting(
        INSTALLER, _text,
        "the time zone that event times of type timestamp or date are read in (against "
        "argus_now(), the horizon) by every cycle, registration and migration, whatever zone the "
        "session running it has (changed only while no query is registered; default: the zone of "
        "the session that installed argus)"),
    "durability": Setting(
        "derived", _choice("derived", "logged"),
        "derived: the tables argus can recompute from the stream histories (node histories, "
        "aggregate states, answers) write no WAL (UNLOGGED): a crash empties them and argus "
        "rebuilds them from the histories; logged: every table survives a crash as it is"),
    "stale_staging_after": Setting(
        "1 hour", _interval,
        "a Spark load's staging table this old, that no live load holds, was left by a load that "
        "died: the next load or cycle drops it"),
}

def column_defaults() -> sql.Composed:
    """The catalog's settings row takes its defaults from SETTINGS: an ALTER of each
    column (none for time_zone, set when argus is installed)."""
    return sql.SQL("").join(
        sql.SQL("ALTER TABLE argus_catalog.settings ALTER COLUMN {} {};\n").format(
            sql.Identifier(name), sql.SQL("DROP DEFAULT") if s.default is None else
            sql.SQL("SET DEFAULT {}").format(sql.Literal(s.default)))
        for name, s in SETTINGS.items() if s.default is not INSTALLER)


# Tuning whose defaults suit most networks: `argus config` lists these apart.
EXPERT = frozenset({"maintenance", "random_page_cost", "plan_kept_rows", "truncate_delta_bytes",
                    "truncate_inbox_bytes", "unread_inbox_bytes", "virtual_selectivity",
                    "virtual_join_growth", "migration_min_gain", "migration_horizon",
                    "stale_staging_after"})


# What a session may set that changes a query's values (a date's instant, a
# timestamp's text): every cycle, registration and migration evaluates with these, as
# argus.run_cycle does (catalog/functions.sql), whoever runs it.
# And how node code is parsed: with standard_conforming_strings off, a literal ending
# in a backslash ran on into the SQL after it, which a registrar wrote (a helper).
PINNED = {"DateStyle": "ISO, MDY", "IntervalStyle": "postgres", "bytea_output": "hex",
          "extra_float_digits": "1", "search_path": "pg_catalog, pg_temp",
          "standard_conforming_strings": "on", "transform_null_equals": "off",
          "array_nulls": "on"}
# And these, pinned to the values the session that installed argus had
# (argus_catalog.pinned_settings): a writer set its own before its cycles and changed
# stored answers (to_tsvector(text), to_char's TM, L, D and G; a helper).
PINNED_FROM_INSTALL = ("default_text_search_config", "lc_monetary", "lc_numeric", "lc_time",
                       "timezone_abbreviations", "xmlbinary", "xmloption")


_USER_PATHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FOR_GOOD: weakref.WeakSet = weakref.WeakSet()  # (pin_search_path's: no round trip again)


def _pin(conn: psycopg.Connection) -> str | None:
    """The session's search_path set to the pinned one, in one round trip; the path it
    had (kept: `user_schemas`), or None if it had that one already."""
    (path, _) = conn.execute(
        "SELECT pg_catalog.current_setting('search_path'), "
        "pg_catalog.set_config('search_path', %s, false)", (PINNED["search_path"],)).fetchone()
    if path == PINNED["search_path"]:
        return None
    _USER_PATHS[conn] = path
    return path


def pin_search_path(conn: psycopg.Connection) -> None:
    """A connection of argus's own (the dashboard's, a subscription's, a load's): every
    statement on it with the search_path cycles run with (`pinned_path`)."""
    _pin(conn)
    _FOR_GOOD.add(conn)


@contextlib.contextmanager
def pinned_path(conn: psycopg.Connection) -> Iterator[None]:
    """argus's statements within the block (an API call's: catalog reads by `status`,
    `results`, `explain`, `drop`, `track`…) run with the search_path cycles run with,
    and the session's own comes back after it, for the caller's SQL. Unpinned, a
    polymorphic or cross-type call in them (array_agg(text), concat_ws, substr(name,
    …), name LIKE …) took an exact-typed function a registrar could create in `public`
    or a schema named as the session's role, and ran it with the caller's rights (found
    by a helper). The session's path is kept meanwhile: the names a query calls, and a
    table to track, are looked up on it (`user_schemas`, `user_relation`)."""
    path = None if conn in _FOR_GOOD else _pin(conn)
    if path is None:  # (already: an inner call, or argus's own connection)
        yield
        return
    try:
        yield
    finally:  # (a failed transaction's rollback takes the setting back itself)
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.INERROR \
                and not conn.closed:
            conn.execute("SELECT pg_catalog.set_config('search_path', %s, false)", (path,))


def _on_users_path(conn: psycopg.Connection, statement: str, params: tuple):
    """`statement` (calling only pg_catalog's functions, by schema) run on the session's
    own search_path, in a savepoint rolled back: its row."""
    (path,) = conn.execute("SELECT pg_catalog.current_setting('search_path')").fetchone()
    if path == PINNED["search_path"]:
        path = _USER_PATHS.get(conn, path)
    with conn.transaction(force_rollback=True):
        conn.execute("SELECT pg_catalog.set_config('search_path', %s, true)", (path,))
        return conn.execute(statement, params).fetchone()


def user_schemas(conn: psycopg.Connection) -> list[str]:
    """The schemas the session's own search_path names, in order (pg_catalog's place
    included)."""
    return _on_users_path(conn, "SELECT pg_catalog.current_schemas(true)", ())[0]


def user_relation(conn: psycopg.Connection, name: str) -> int | None:
    """The oid of the relation `name` names on the session's own search_path."""
    return _on_users_path(conn, "SELECT pg_catalog.to_regclass(%s)::pg_catalog.oid",
                          (name,))[0]


_NAMES = ["TimeZone", *PINNED, *PINNED_FROM_INSTALL]


def _set_all(values: list[sql.Composable]) -> sql.Composed:
    return sql.SQL(", ").join(sql.SQL("set_config({}, {}, true)").format(sql.Literal(n), v)
                              for n, v in zip(_NAMES, values))


_PINNED_VALUES = _set_all([  # (read FROM argus_catalog.settings)
    sql.SQL("time_zone"), *map(sql.Literal, PINNED.values()),
    *(sql.SQL("(SELECT value FROM argus_catalog.pinned_settings WHERE name = {})").format(
        sql.Literal(n)) for n in PINNED_FROM_INSTALL)])


@contextlib.contextmanager
def pinned_session(conn: psycopg.Connection) -> Iterator[None]:
    """Evaluate with the setting time_zone and PostgreSQL's default styles within the
    block, which runs in a transaction: the same rows must give the same answer whoever
    runs a cycle (a cron job with PGTZ or PGDATESTYLE set) or registers a query; and the
    search_path cycles run with, so that no schema the session's path names (a public a
    registrar may create in, a schema named as the session's role) puts a registrar's
    operator or function in place of one a node's code calls — an owner's or a
    superuser's `argus retry`, `optimize`, `explain` or re-plan would run it with their
    rights (found by a helper). The caller's settings come back after it (a failed
    block's rollback restores them)."""
    # one round trip: the caller's values are read (the CTE, first) before they are set
    saved = conn.execute(sql.SQL(
        "WITH saved AS MATERIALIZED (SELECT ARRAY[{}] AS v) "
        "SELECT saved.v, {} FROM saved, argus_catalog.settings").format(
            sql.SQL(", ").join(sql.SQL("current_setting({})").format(sql.Literal(n))
                               for n in _NAMES), _PINNED_VALUES)).fetchone()[0]
    yield
    conn.execute(sql.SQL("SELECT {}").format(_set_all(list(map(sql.Literal, saved)))))


def get(conn: psycopg.Connection) -> dict[str, object]:
    names = list(SETTINGS)
    row = conn.execute(sql.SQL("SELECT {} FROM argus_catalog.settings").format(
        sql.SQL(", ").join(sql.SQL("{}::text" if n in INTERVALS else "{}").format(
            sql.Identifier(n)) for n in names))).fetchone()
    return dict(zip(names, row))


def configure(conn: psycopg.Connection, **values: object) -> dict[str, object]:
    """Change settings (all or none); the settings after the change."""
    parsed = {}
    for name, text in values.items():
        if name not in SETTINGS:
            raise SettingError(f"unknown setting {name!r} (settings: {', '.join(SETTINGS)})")
        try:
            parsed[name] = SETTINGS[name].parse(text)
        except ValueError as exc:
            raise SettingError(f"setting {name!r} cannot be {text!r}: {exc}") from None
    if "time_zone" in parsed:
        _check_time_zone(conn, parsed["time_zone"])
    if parsed.get("max_clock_lead") is not None:
        _check_lead(conn, parsed["max_clock_lead"])
    if parsed:
        try:
            conn.execute(sql.SQL("UPDATE argus_catalog.settings SET {}").format(
                sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(n))
                                   for n in parsed)), list(parsed.values()))
        except psycopg.DataError as exc:
            raise SettingError(f"settings {', '.join(parsed)} cannot be "
                               f"{', '.join(map(repr, values.values()))}: "
                               f"{exc.diag.message_primary}") from None
    return get(conn)


def _check_lead(conn: psycopg.Connection, lead: str) -> None:
    """A lead of no less than nothing, whose horizon (each cycle's now() plus it) stays
    within PostgreSQL's timestamps for a thousand years: '300000 years' was taken, and
    every cycle failed on it (found by a helper)."""
    try:
        with conn.transaction(force_rollback=True):
            (negative, _) = conn.execute(
                "SELECT %s::interval < interval '0', (now() + %s::interval "
                "+ interval '1000 years') IS NOT NULL", (lead, lead)).fetchone()
    except psycopg.errors.DatetimeFieldOverflow:
        raise SettingError(f"setting 'max_clock_lead' cannot be {lead!r}: each cycle "
                           "holds back rows whose time is past now() plus it, which must "
                           "be a timestamp PostgreSQL has (up to 294276 AD) for a "
                           "thousand years") from None
    except psycopg.DataError as exc:
        raise SettingError(f"setting 'max_clock_lead' cannot be {lead!r}: "
                           f"{exc.diag.message_primary or exc}") from None
    if negative:
        raise SettingError(f"setting 'max_clock_lead' cannot be {lead!r}: a lead below "
                           "nothing would hold back every row (null: none held back)")


def _check_time_zone(conn: psycopg.Connection, zone: str) -> None:
    """A zone the TimeZone setting takes (not an abbreviation such as PDT, which
    timezone() takes: every cycle would fail), changed only while no query is
    registered (a query registered after it would share nodes computed in the old
    zone)."""
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("SELECT set_config('TimeZone', %s, true)", (zone,))
    except psycopg.DataError as exc:
        raise SettingError(f"setting 'time_zone' cannot be {zone!r}: "
                           f"{exc.diag.message_primary}") from None
    (current, queries) = conn.execute(
        "SELECT time_zone, (SELECT count(*) FROM argus_catalog.queries) "
        "FROM argus_catalog.settings").fetchone()
    if zone != current and queries:
        raise SettingError(f"setting 'time_zone' can change only while no query is "
                           f"registered ({queries} are, computed in {current}): a query "
                           "registered after it would share their nodes; unregister them "
                           "first")
