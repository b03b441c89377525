"""Stream nodes: a stream's history, and the claim that moves an inbox's rows into a
cycle (quarantining rows too far ahead of the clock)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from psycopg import sql

from .. import abi
from ..names import stream_inbox
from ..templates import render
from .base import (Kind, register_kind, Node, SIGN_ID, Step, cols, create_delta, tid_column,
                   tid_scan, var)


@dataclass(frozen=True)
class StreamSpec:
    """A stream node's definition: the stream's name."""

    stream: str


class StreamCompiler:
    """A stream's source node: the cycle's claim statement fills its delta."""

    def create(self, node, parents):
        return [create_delta(node)] + ([tid_column(node)] if is_table(node) else [])

    def backfill(self, node, parents):
        return []

    def evaluate(self, node, parents):
        return []

    def flush(self, node, parents):
        def append(source: sql.Identifier, when: str) -> Step:
            return Step(render("stream/flush", hist=node.hist, columns=node.column_list,
                               source=source),
                        sql.SQL(when).format(var(node.id)), dynamic=False)

        if is_table(node):  # its delta always: its claim never leaves rows in the inbox
            # at the ctids its claim read (stream/claim_table), as an aggregate's groups
            when = sql.SQL("{} > 0").format(var(node.id))
            slots = {"hist": node.hist, "delta": node.delta_table, "sign": SIGN_ID}
            return [Step(statement, when, dynamic=False) for statement in (
                render("node/flush_update", stored=node.column_list,
                       d_stored=cols(node.columns, "d"), found=sql.SQL("h.ctid = d.argus_ctid"),
                       updated=tid_scan(node.delta_table, ">"), **slots),
                render("node/flush_delete_tid", **slots),
                render("stream/flush_table_insert", columns=node.column_list, **slots))]
        return [append(stream_inbox(node.hist_ref[1]), abi.LOCKED + " AND {} > 0"),
                append(node.delta_table, "NOT " + abi.LOCKED + " AND {} > 0")]


def upgraded(node: Node) -> list[sql.Composable]:
    """What a node that an older argus created needs for this code (network.stored's
    recompile): since CODE_VERSION 65, a table's delta carries the ctids of its history's
    rows (stream/claim_table)."""
    return [tid_column(node)] if is_table(node) else []


def in_inbox(node: Node) -> Node:
    """A stream node as its children see it when the cycle's claim was locked: its
    claimed rows are the inbox's (sql_templates/program/claim_block.sql)."""
    return (dataclasses.replace(node, claimed_in_inbox=True)
            if node.kind == "stream" and not is_table(node) else node)


def take_var(i: int) -> sql.Composable:
    """Whether the cycle claims the i-th stream's inbox (0-based i)."""
    return abi.at(abi.TAKE, i + 1)


def claim(streams: list[tuple[str, Node, str | None]], *, locked: bool = False,
          left: frozenset[str] = frozenset(), unread: frozenset[str] = frozenset()
          ) -> sql.Composed:
    """One statement that claims every stream's inbox under one snapshot, so a load that
    wrote to several streams in one transaction is claimed whole by one cycle. Returns
    the rows claimed per stream, the largest event time claimed, the late rows and the
    rows held back (quarantined: an event time too far ahead of the server's clock)
    per stream. `locked`: the cycle holds every inbox exclusively; the children read the
    claimed rows in the inbox (`in_inbox`), which is truncated at the end of the cycle,
    instead of rows deleted one by one; only the streams not named in `left` (a query's
    output: its changes view reads the delta table) are also copied. Not locked, the
    rows of the streams in `unread` (no node reads them) go straight to their histories
    (their flush then finds their delta tables empty). Locked or not, an unread stream
    is claimed only when `take(i)` (its inbox grew past settings.unread_inbox_bytes).
    Locked, the rows held back stay in the inbox until `hold_locked` moves them (a scan
    of each inbox that only the rare cycle holding rows back pays for)."""
    claims = [_claim_table_part(node, i) if is_table(node) else
              _claim_stream_part(name, node, time_column, i, locked, left, unread)
              for i, (name, node, time_column) in enumerate(streams)]
    times = [c.time for c in claims if c.time is not None]

    def each(field: str) -> sql.Composable:
        return sql.SQL(", ").join(getattr(c, field) for c in claims)

    return sql.SQL("WITH {} SELECT {}, greatest({}), ARRAY[{}]::bigint[], "
                   "ARRAY[{}]::bigint[], ARRAY[{}]::bigint[], ARRAY[{}]::bigint[]").format(
        sql.SQL(",\n").join(part for c in claims for part in c.parts), each("count"),
        sql.SQL(", ").join(times or [sql.SQL("NULL::timestamptz")]),
        each("late"), each("held"), each("retracted"), each("ignored"))


@dataclass(frozen=True)
class _Claimed:
    """One stream's part of the claim statement: its CTEs, and what it reports."""

    parts: list[sql.Composable]
    count: sql.Composable
    time: sql.Composable | None  # its largest event time claimed (None: no time column)
    late: sql.Composable
    held: sql.Composable
    retracted: sql.Composable
    ignored: sql.Composable


# Built-in types whose equality never calls two values that print alike unequal: a row
# these columns find unequal has changed (stream/claim_table). format_type's names,
# without their modifiers.
_CHEAP_EQUALITY = frozenset({
    "smallint", "integer", "bigint", "numeric", "real", "double precision", "boolean",
    "text", "character varying", "character", "bytea", "uuid", "date", "interval",
    "timestamp without time zone", "timestamp with time zone", "time without time zone"})


def _equal_cheaply(pg_type: str) -> bool:
    return re.sub(r"\([0-9, ]*\)", "", pg_type).strip() in _CHEAP_EQUALITY


def _claim_table_part(node: Node, i: int) -> _Claimed:
    """A table's changes, netted per key into a signed delta."""
    stats = sql.Identifier(f"stats_{i}")
    return _Claimed(_claim_table(node, i, sql.Identifier(f"claimed_{i}"), stats),
                    sql.SQL("(SELECT n FROM {})").format(stats), None,
                    sql.SQL("0"), sql.SQL("0"),
                    sql.SQL("(SELECT retracted FROM {})").format(stats),
                    sql.SQL("(SELECT ignored FROM {})").format(stats))


def _claim_stream_part(name: str, node: Node, time_column: str | None, i: int,
                       locked: bool, left: frozenset[str], unread: frozenset[str]
                       ) -> _Claimed:
    """An insert-only stream's rows, admitted or held back by their event time."""
    claimed, stats = sql.Identifier(f"claimed_{i}"), sql.Identifier(f"stats_{i}")
    parts = []
    t = sql.Identifier(time_column) if time_column else None
    admitted = render("stream/admitted", t=t) if t else sql.SQL("TRUE")
    take = take_var(i) if name in unread else None  # claimed only if taken
    if not (locked and name in left):
        template = ("stream/claim_locked" if locked else
                    "stream/claim_direct" if name in unread else "stream/claim")
        parts.append(render(template, claimed=claimed, moved=sql.Identifier(f"moved_{i}"),
                            inbox=stream_inbox(name), delta=node.delta_table,
                            history=node.hist, columns=node.column_list, sign=SIGN_ID,
                            admitted=admitted, take=take))
    if t and not locked:
        parts.append(render("stream/hold", held=sql.Identifier(f"held_{i}"),
                            claimed=claimed, name=sql.Literal(name), t=t, row=_row(node)))
    # locked, the inbox is stable: a second scan of it is cheaper than keeping the
    # claimed rows in a tuple store for both the move and the statistics
    if locked:
        claimed = sql.SQL("(SELECT {}, {} AS argus_admitted FROM {} WHERE {}) AS {}").format(
            t or sql.SQL("1"), admitted, stream_inbox(name), take or sql.SQL("TRUE"), claimed)
    parts.append(render("stream/claim_stats", stats=stats, claimed=claimed,
                        latest=sql.SQL("(max({}) FILTER (WHERE argus_admitted))::timestamptz"
                                       ).format(t) if t else sql.SQL("NULL::timestamptz"),
                        late=sql.SQL("count(*) FILTER (WHERE argus_admitted AND {} < {})").format(
                            t, abi.v(abi.CLOCK_OLD))
                        if t else sql.SQL("0")))
    return _Claimed(parts, sql.SQL("(SELECT n FROM {})").format(stats),
                    sql.SQL("(SELECT latest FROM {})").format(stats),
                    sql.SQL("(SELECT late FROM {})").format(stats),
                    sql.SQL("(SELECT held FROM {})").format(stats), sql.SQL("0"), sql.SQL("0"))


def _row(node: Node) -> sql.Composed:
    """A held-back row `c` as its inbox's record (its text: quarantine.row_text)."""
    return sql.SQL("ROW({})").format(sql.SQL(", ").join(
        sql.Identifier("c", column) for column in node.columns))


def hold_locked(streams: list[tuple[str, Node, str | None]],
                unread: frozenset[str] = frozenset()) -> sql.Composed | None:
    """After a locked claim, the program's code that moves the rows it counted as held
    back (abi.HELD) from the inboxes to the quarantine, in one statement run only if
    there are some, before any child reads the inboxes in place. None: no stream has a
    time column, so none holds rows back."""
    parts = []
    for i, (name, node, time_column) in enumerate(streams):
        if is_table(node) or not time_column:
            continue
        t = sql.Identifier(time_column)
        refused = sql.SQL("{} > 0 AND NOT {}").format(
            abi.at(abi.HELD, i + 1), render("stream/admitted", t=t))
        if name in unread:
            refused = sql.SQL("{} AND {}").format(take_var(i), refused)
        parts.append(render("stream/hold_locked", held=sql.Identifier(f"held_{i}"),
                            taken=sql.Identifier(f"taken_{i}"), inbox=stream_inbox(name),
                            name=sql.Literal(name), t=t, refused=refused, row=_row(node)))
    if not parts:
        return None
    # data-modifying CTEs run whatever the statement returns (INTO: PL/pgSQL wants one)
    return sql.SQL("        IF 0 < ANY({}) THEN\n            WITH {} SELECT 0 INTO {};\n"
                   "        END IF;").format(abi.v(abi.HELD), sql.SQL(",\n").join(parts),
                                            abi.v(abi.ROW_COUNT))


def is_table(node: Node) -> bool:
    """A table (argus.tables): a stream whose rows change by key, so not insert-only."""
    return node.kind == "stream" and not node.insert_only


def key_join(key, left: str, right: str) -> sql.Composed:
    """A table's rows in `left` and `right` with the same key."""
    return sql.SQL(" AND ").join(sql.SQL("{} = {}").format(sql.Identifier(left, k),
                                                           sql.Identifier(right, k))
                                 for k in key)


def _claim_table(node: Node, i: int, claimed: sql.Identifier, stats: sql.Identifier
                 ) -> list[sql.Composed]:
    last, moved = sql.Identifier(f"last_{i}"), sql.Identifier(f"moved_{i}")
    probed = sql.Identifier(f"probed_{i}")
    name, key = node.definition["stream"], node.definition["key"]
    def old(columns) -> sql.Composed:
        return sql.SQL(", ").join(sql.SQL("(p.argus_old).{}").format(sql.Identifier(c))
                                  for c in columns)

    o_columns, p_columns = old(node.columns), cols(node.columns, "p")
    printed = sql.SQL("ROW({})::text IS DISTINCT FROM ROW({})::text").format(
        o_columns, p_columns)
    cheap = [c for c, t in zip(node.columns, node.types) if _equal_cheaply(t)]
    differs = sql.SQL("ROW({}) IS DISTINCT FROM ROW({}) OR {}").format(
        old(cheap), cols(cheap, "p"), printed) if cheap else printed
    return [render("stream/claim_table", claimed=claimed, last=last, probed=probed, moved=moved,
                   inbox=stream_inbox(name), delta=node.delta_table, history=node.hist,
                   columns=node.column_list, sign=SIGN_ID, key=cols(key), differs=differs,
                   o_columns=o_columns, p_columns=p_columns,
                   first=sql.Identifier(key[0]), l_join=key_join(key, "argus_h", "l")),
            render("stream/claim_table_stats", stats=stats, sign=SIGN_ID, moved=moved,
                   probed=probed)]


KIND = register_kind(Kind("stream", lambda d: StreamSpec(d["stream"]), StreamCompiler(),
                     lambda node: [], loaded=True,
                     label=lambda node: f"stream {node.hist_ref[1]}"))
