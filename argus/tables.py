"""Tables: inputs whose rows change by a declared key (inserts, updates, deletes).

A table is a stream whose source node is not insert-only. Its inbox holds changes
(`argus_op`: i, u, d; `argus_seq`: their order), checked against the key as they are
loaded (sql_templates/stream/table_check.sql); a cycle nets each key's changes into a
signed delta (stream/claim_table) that the network carries like any other retraction,
and applies it to the table's history at the ctids the claim read (node/flush_update,
node/flush_delete_tid, stream/flush_table_insert).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import psycopg
from psycopg import sql

from .errors import InvalidNameError, LoadError, UnknownStreamError
from .frontend.analyze import StreamSchema
from .names import check_name, stream_history, stream_inbox
from .nodes.base import cols
from .nodes.stream import key_join
from .templates import render

OPS = {"insert": "i", "update": "u", "delete": "d"}


def check_key(name: str, primary_key: Iterable[str] | None, columns: Mapping[str, object],
              time_column: str | None) -> list[str] | None:
    """The declared key, checked (None: an insert-only stream)."""
    if primary_key is None:
        return None
    key = [check_name(k, "column") for k in ([primary_key] if isinstance(primary_key, str)
                                             else primary_key)]
    if not key or len(set(key)) != len(key):
        raise InvalidNameError(f"table {name!r}: the primary key must name one or more "
                               f"distinct columns, got {primary_key!r}")
    unknown = [k for k in key if k not in columns]
    if unknown:
        raise InvalidNameError(f"table {name!r}: key column {unknown[0]!r} is not one of its "
                               f"columns ({', '.join(columns)})")
    if time_column is not None:
        raise InvalidNameError(f"table {name!r}: a table has no event time (its rows change; "
                               "windows over the stream clock need an insert-only stream)")
    return key


def create_inbox(conn: psycopg.Connection, name: str, key: list[str],
                 not_null: list[str]) -> None:
    """The table's history keyed, its inbox of changes, and the check of each load."""
    history, inbox = stream_history(name), stream_inbox(name)
    conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(history, cols(key)))
    # rows are updated in place (node/flush_update): room left in each page lets
    # an update that changes no indexed column stay on its page (HOT), with no index entry
    conn.execute(sql.SQL("ALTER TABLE {} SET (fillfactor = 85)").format(history))
    # (LIKE copies the key's NOT NULL from the history)
    conn.execute(render("stream/create_table_inbox", inbox=inbox, history=history))
    for column in not_null:
        if column not in key:
            conn.execute(render("stream/table_not_null", inbox=inbox,
                                column=sql.Identifier(column),
                                constraint=sql.Identifier(f"{column} is not null"[:63])))
    conn.execute(render(
        "stream/table_check", function=inbox, inbox=inbox, history=history, key=cols(key),
        name=sql.Literal(name), first=sql.Identifier(key[0]), p_join=key_join(key, "p", "n"),
        h_join=key_join(key, "h", "n"), n_key=cols(key, "n"), bad_key=cols(key, "argus_bad")))


def key_of(schema: StreamSchema) -> list[str]:
    """A table's key; UnknownStreamError if `schema` is an insert-only stream's."""
    if schema.primary_key is None:
        raise UnknownStreamError(f"{schema.name!r} is a stream, not a table: its rows are only "
                                 "inserted (create a table with a primary key to update or "
                                 "delete rows)")
    return list(schema.primary_key)


def _values(row: object, columns: list[str], name: str, what: str) -> tuple:
    """A change's values: a tuple of `columns`, a dict of exactly them, or (for a key
    of one column) the value alone."""
    if isinstance(row, Mapping):
        if set(map(str, row)) != set(columns):
            raise LoadError(f"table {name!r}: {what} names {', '.join(columns)}; got "
                            f"{', '.join(map(str, row))}; nothing loaded")
        return tuple(row[c] for c in columns)
    values = tuple(row) if isinstance(row, (tuple, list)) else (row,)
    if len(values) != len(columns):
        raise LoadError(f"table {name!r}: {what} names {', '.join(columns)}; got {row!r}; "
                        "nothing loaded")
    return values


def refuse_tracked(schema: StreamSchema) -> None:
    """A tracked table changes only through its source: a direct load could contradict
    the source and then fail the application's own statements."""
    if schema.source is not None:
        raise LoadError(f"table {schema.name!r} follows {schema.source} (argus track): change "
                        f"{schema.source} instead, or `argus untrack` it first; nothing loaded")


def load_changes(conn: psycopg.Connection, name: str, op: str, columns: list[str],
                 rows: Iterable[object]) -> int:
    """COPY changes of one kind into a table's inbox, all or none (a savepoint when
    the caller's transaction is open); a row breaking the key fails the load, named."""
    what = {"insert": "an insert", "update": "an update", "delete": "a delete"}[op]
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
        raise LoadError(f"table {name!r}: {op} takes a list of "
                        f"{'keys' if op == 'delete' else 'rows'}, got {type(rows).__name__} "
                        f"{rows!r:.60}; nothing loaded")
    rows = [_values(r, columns, name, what) for r in rows]
    statement = sql.SQL("COPY {} ({}, argus_op) FROM STDIN").format(
        stream_inbox(name), cols(columns))
    try:
        with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
            for row in rows:
                copy.write_row((*row, OPS[op]))
    except (psycopg.errors.DataError, psycopg.errors.IntegrityError) as exc:
        raise LoadError(f"table {name!r}: nothing loaded: {exc.diag.message_primary}"
                        ) from None
    return len(rows)


def truncate_changes(name: str, key) -> sql.Composed:
    """A TRUNCATE of a tracked table's source, as changes: a 'd' of every key the table
    holds or has waiting (stream/capture_truncate; argus.track, argus.slot)."""
    return render("stream/capture_truncate", inbox=stream_inbox(name),
                  history=stream_history(name), key=cols(key))
