"""Tables: inputs whose rows change by a declared key (inserts, updates, deletes).

A table is a stream whose source node is not insert-only. Its inbox holds changes
(`argus_op`: i, u, d; `argus_seq`: their order), checked against the key as they are
loaded (sql_templates/stream/table_check.sql); a cycle nets each key's changes into a
signed delta (stream/claim_table) that the network carries like any other retraction,
and applies it to the table's history by key (stream/flush_table).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import psycopg
from psycopg import sql

from .errors import InvalidNameError, LoadError, UnknownStreamError
from .names import check_name, stream_history, stream_inbox
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
    ident = sql.SQL(", ").join(map(sql.Identifier, key))
    conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(history, ident))
    conn.execute(render("stream/create_table_inbox", inbox=inbox, history=history))
    for column in not_null:
        if column not in key:
            conn.execute(render("stream/table_not_null", inbox=inbox,
                                column=sql.Identifier(column),
                                constraint=sql.Identifier(f"{column} is not null"[:63])))
    for column in key:
        conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET NOT NULL").format(
            inbox, sql.Identifier(column)))

    def joined(alias: str) -> sql.Composed:
        return sql.SQL(" AND ").join(
            sql.SQL("{}.{} = n.{}").format(sql.Identifier(alias), sql.Identifier(k),
                                           sql.Identifier(k)) for k in key)

    conn.execute(render(
        "stream/table_check", function=inbox, inbox=inbox, history=history, key=ident,
        name=sql.Literal(name), first=sql.Identifier(key[0]), p_join=joined("p"),
        h_join=joined("h"),
        n_key=sql.SQL(", ").join(sql.SQL("n.{}").format(sql.Identifier(k)) for k in key),
        bad_key=sql.SQL(", ").join(sql.SQL("argus_bad.{}").format(sql.Identifier(k))
                                   for k in key)))


def primary_key(conn: psycopg.Connection, name: str) -> list[str]:
    """A table's key; UnknownStreamError if `name` is no table."""
    row = conn.execute("SELECT primary_key FROM argus.stream_schemas() WHERE name = %s",
                       (check_name(name, "table"),)).fetchone()  # (those the role may use)
    if row is None:
        raise UnknownStreamError(f"unknown table {name!r}")
    if row[0] is None:
        raise UnknownStreamError(f"{name!r} is a stream, not a table: its rows are only "
                                 "inserted (create a table with a primary key to update or "
                                 "delete rows)")
    return row[0]


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
        stream_inbox(name), sql.SQL(", ").join(map(sql.Identifier, columns)))
    try:
        with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
            for row in rows:
                copy.write_row((*row, OPS[op]))
    except (psycopg.errors.DataError, psycopg.errors.IntegrityError) as exc:
        raise LoadError(f"table {name!r}: nothing loaded: {exc.diag.message_primary}"
                        ) from None
    return len(rows)
