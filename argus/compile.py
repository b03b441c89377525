"""Node → SQL: one compiler per node kind, one dispatch table (`COMPILERS`).

A compiler turns a node of the network (and its parents) into the statements that
create its tables, backfill it at registration, fill its delta in a cycle and flush the
delta into its history. Cycle statements are `Step`s: a statement, the PL/pgSQL
condition under which it runs (which deltas must have rows) and whether it is planned
at run time (EXECUTE: joins and lookups, whose best plan depends on the delta's size)
or once (static: a scan of one delta). `frame` is the PL/pgSQL function every node's
steps are assembled into. Pure: SQL is built from sql_templates/, nothing runs here.

Two paths: an insert-only node (every input append-only, an operator that only adds
rows) appends its delta to its history. A node on the signed path (aggregates, left,
anti joins, EXCEPT, and everything downstream of them) receives and emits -1 rows; its
history carries argus_hash, a hash of each row's value, so that a retraction removes
exactly the copies it names.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Protocol

import sqlglot
from psycopg import sql
from sqlglot import exp

from .aggregates import Book, Model, Spec
from .blocks import substitute
from .canon import sargable
from .names import SIGN, node_delta, std_alias, stream_inbox
from .temporal import Bound, at_previous_clock, clock_once
from .templates import render
from .trees import DIALECT

T1 = sql.Identifier(std_alias(1))
T2 = sql.Identifier(std_alias(2))
SIGN_ID = sql.Identifier(SIGN)
NETWORK = "argus_net"
# The version of the code compiled into argus_catalog.nodes (cycle_block, flush_block).
# Bump it when a template or compiler changes what it emits: argus recompiles stored
# code older than this when it connects (argus.network.recompile_stale).
CODE_VERSION = 19


@dataclass(frozen=True)
class Node:
    id: int
    kind: str
    join_level: int
    sequence_id: int
    parents: tuple[int, ...]
    columns: tuple[str, ...]  # visible columns, what children and views read
    exprs: tuple[str, ...]  # how each column is computed, over the parents' t1, t2, …
    hist_ref: tuple[str, str]  # (schema, table) of the history
    definition: dict = field(default_factory=dict, compare=False)
    insert_only: bool = True
    types: tuple[str, ...] = ()  # PostgreSQL types of `columns`, once the table exists
    claimed_in_inbox: bool = field(default=False, compare=False)  # see `in_inbox`

    @property
    def hist(self) -> sql.Identifier:
        return sql.Identifier(*self.hist_ref)

    @property
    def delta(self) -> sql.Composable:
        """What children read as this node's changes: its delta table, or for a stream
        whose claim left the rows in the inbox (`in_inbox`), the inbox."""
        if self.claimed_in_inbox:
            return sql.SQL("(SELECT {}, 1::smallint AS {} FROM {})").format(
                self.column_list, SIGN_ID, stream_inbox(self.hist_ref[1]))
        return node_delta(self.id)

    @property
    def delta_table(self) -> sql.Identifier:
        return node_delta(self.id)

    def aux(self, suffix: str) -> sql.Identifier:
        return sql.Identifier(NETWORK, f"n{self.id}_{suffix}")

    @property
    def column_list(self) -> sql.Composed:
        return cols(self.columns)

    @property
    def named_expr_list(self) -> sql.Composed:
        return named(self.exprs, self.columns)


@dataclass(frozen=True)
class Step:
    statement: sql.Composable
    condition: sql.Composable | None = None  # None: whenever the node runs
    dynamic: bool = True


# -- small SQL builders ----------------------------------------------------------------

def cols(names, prefix: str | None = None) -> sql.Composed:
    if prefix is None:
        return sql.SQL(", ").join(map(sql.Identifier, names))
    return sql.SQL(", ").join(sql.Identifier(prefix, n) for n in names)


def named(exprs, names) -> sql.Composed:
    return sql.SQL(", ").join(sql.SQL("{} AS {}").format(sql.SQL(e), sql.Identifier(n))
                              for e, n in zip(exprs, names))


def row_hash(names, prefix: str | None = None) -> sql.Composed:
    """The value hash of a row: NULL-safe, and equal for equal values (1.0 = 1.00)."""
    if not names:
        return sql.SQL("0::bigint")
    return sql.SQL("hash_record_extended(ROW({}), 0)").format(cols(names, prefix))


def expr_hash(exprs) -> sql.Composed:
    if not exprs:
        return sql.SQL("0::bigint")
    return sql.SQL("hash_record_extended(ROW({}), 0)").format(
        sql.SQL(", ").join(sql.SQL(e) for e in exprs))


def same_row(names, a: str, b: str) -> sql.Composed:
    """a's and b's rows have equal values (NULLs equal), found through argus_hash.

    The value comparison is wrapped in CASE: PostgreSQL estimates a bare
    ROW(…) IS NOT DISTINCT FROM ROW(…) as one row whatever the inputs, and then picks
    nested loops that scan a table per row; a CASE is estimated at one half."""
    if not names:
        return sql.SQL("TRUE")
    return sql.SQL("{}.argus_hash = {}.argus_hash AND CASE WHEN ROW({}) IS NOT DISTINCT FROM "
                   "ROW({}) THEN true ELSE false END").format(
        sql.Identifier(a), sql.Identifier(b), cols(names, a), cols(names, b))


def unqualified(expr: str) -> str:
    """An expression over t1 as an index expression: without the table qualifier."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(expr, read=DIALECT)
    for column in tree.find_all(exp.Column):
        column.set("table", None)
    return tree.sql(dialect=DIALECT)


def var(node_id: int) -> sql.SQL:
    """The program variable holding the rows node `node_id` wrote to its delta."""
    return sql.SQL(f"argus_n{int(node_id)}")


def any_rows(*nodes: Node) -> sql.Composed:
    return sql.SQL(" OR ").join(sql.SQL("{} > 0").format(var(n.id)) for n in nodes)


def all_rows(*nodes: Node) -> sql.Composed:
    return sql.SQL(" AND ").join(sql.SQL("{} > 0").format(var(n.id)) for n in nodes)


def signed_slots(node: Node) -> dict[str, sql.Composable]:
    """Slots shared by templates that write a node's rows through a subquery `s`."""
    hashing = not node.insert_only
    return {
        "columns": node.column_list, "s_columns": cols(node.columns, "s"),
        "hash_column": sql.SQL(", argus_hash") if hashing else sql.SQL(""),
        "hash_expr": sql.SQL(", ") + row_hash(node.columns, "s") if hashing else sql.SQL(""),
        "sign": SIGN_ID, "t1": T1, "t2": T2,
    }


class Compiler(Protocol):
    def create(self, node: Node, parents: list[Node]) -> list[sql.Composable]: ...

    def backfill(self, node: Node, parents: list[Node]) -> list[sql.Composable]: ...

    def evaluate(self, node: Node, parents: list[Node]) -> list[Step]: ...

    def flush(self, node: Node, parents: list[Node]) -> list[Step]: ...


def virtual(node: Node) -> bool:
    """The node's history and delta are views over its parent's (select/create_view):
    a selection over an aggregate's groups, or over such a selection."""
    return node.kind == "select" and bool(node.definition.get("virtual"))


def create_delta(node: Node) -> sql.Composed:
    return render("node/create_delta", delta=node.delta_table, hist=node.hist, sign=SIGN_ID)


def add_hash(node: Node) -> list[sql.Composable]:
    return [] if node.insert_only else [render("node/add_hash", hist=node.hist)]


def bag_flush(node: Node, names=None) -> list[Step]:
    """Merge the delta into a history that holds one row per copy."""
    names = node.columns if names is None else names
    when = sql.SQL("{} > 0").format(var(node.id))
    if node.insert_only:
        return [Step(render("node/flush_insert_only", hist=node.hist, delta=node.delta,
                            columns=cols(names)), when, dynamic=False)]
    slots = {"hist": node.hist, "delta": node.delta, "sign": SIGN_ID, "columns": cols(names),
             "h_columns": cols(names, "h"), "n_columns": cols(names, "n")}
    return [Step(render("node/flush_retract", **slots), when),
            Step(render("node/flush_insert_signed", **slots), when)]


# -- streams ---------------------------------------------------------------------------

class StreamCompiler:
    """A stream's source node: the cycle's claim statement fills its delta."""

    def create(self, node, parents):
        return [create_delta(node)]

    def backfill(self, node, parents):
        return []

    def evaluate(self, node, parents):
        return []

    def flush(self, node, parents):
        def append(source: sql.Identifier, when: str) -> Step:
            return Step(render("stream/flush", hist=node.hist, columns=node.column_list,
                               source=source),
                        sql.SQL(when).format(var(node.id)), dynamic=False)

        return [append(stream_inbox(node.hist_ref[1]), "argus_locked AND {} > 0"),
                append(node.delta_table, "NOT argus_locked AND {} > 0")]


def in_inbox(node: Node) -> Node:
    """A stream node as its children see it when the cycle's claim was locked: its
    claimed rows are the inbox's (sql_templates/program/claim_block.sql)."""
    return dataclasses.replace(node, claimed_in_inbox=True) if node.kind == "stream" else node


def claim(streams: list[tuple[str, Node, str | None]], *, locked: bool = False,
          left: frozenset[str] = frozenset()) -> sql.Composed:
    """One statement that claims every stream's inbox under one snapshot, so a load that
    wrote to several streams in one transaction is claimed whole by one cycle. Returns
    the rows claimed per stream, the largest event time claimed, the late rows and the
    rows held back (quarantined: an event time too far ahead of the server's clock)
    per stream. `locked`: the cycle holds every inbox exclusively; the children read the
    claimed rows in the inbox (`in_inbox`), which is truncated at the end of the cycle,
    instead of rows deleted one by one; only the streams not named in `left` (a query's
    output: its changes view reads the delta table) are also copied."""
    parts, counts, times, late, held = [], [], [], [], []
    for i, (name, node, time_column) in enumerate(streams):
        claimed, stats = sql.Identifier(f"claimed_{i}"), sql.Identifier(f"stats_{i}")
        t = sql.Identifier(time_column) if time_column else None
        admitted = render("stream/admitted", t=t) if t else sql.SQL("TRUE")
        hold = {"held": sql.Identifier(f"held_{i}"), "taken": sql.Identifier(f"taken_{i}"),
                "inbox": stream_inbox(name), "claimed": claimed, "name": sql.Literal(name),
                "t": t, "admitted": admitted}
        if t and locked:
            parts.append(render("stream/hold_locked", **hold))
        if not (locked and name in left):
            parts.append(render("stream/claim_locked" if locked else "stream/claim",
                                claimed=claimed, moved=sql.Identifier(f"moved_{i}"),
                                inbox=stream_inbox(name), delta=node.delta_table,
                                columns=node.column_list, sign=SIGN_ID, admitted=admitted))
        if t and not locked:
            parts.append(render("stream/hold", **hold))
        # locked, the inbox is stable: a second scan of it is cheaper than keeping the
        # claimed rows in a tuple store for both the move and the statistics
        parts.append(render("stream/claim_stats", stats=stats, admitted=admitted,
                            claimed=stream_inbox(name) if locked else claimed,
                            latest=sql.SQL("(max({}) FILTER (WHERE {}))::timestamptz").format(
                                t, admitted) if t else sql.SQL("NULL::timestamptz"),
                            late=sql.SQL("count(*) FILTER (WHERE {} AND {} < "
                                         "(SELECT argus.clock_now()))").format(admitted, t)
                            if t else sql.SQL("0")))
        counts.append(sql.SQL("(SELECT n FROM {})").format(stats))
        times.append(sql.SQL("(SELECT latest FROM {})").format(stats))
        late.append(sql.SQL("(SELECT late FROM {})").format(stats))
        held.append(sql.SQL("(SELECT held FROM {})").format(stats))
    return sql.SQL("WITH {} SELECT {}, greatest({}), ARRAY[{}]::bigint[], "
                   "ARRAY[{}]::bigint[]").format(
        sql.SQL(",\n").join(parts), sql.SQL(", ").join(counts), sql.SQL(", ").join(times),
        sql.SQL(", ").join(late), sql.SQL(", ").join(held))


# -- selection -------------------------------------------------------------------------

class SelectCompiler:
    """Selection and projection. A temporal selection (its predicate reads the clock)
    also retracts its rows that expire as the clock rises and, unless its predicate is
    a lower bound, takes in old parent rows that start to satisfy it."""

    def _slots(self, node: Node) -> dict:
        predicate = clock_once(node.definition.get("predicate") or "TRUE")
        return {**signed_slots(node), "named_exprs": node.named_expr_list,
                "predicate": sql.SQL(predicate)}

    @staticmethod
    def own(node: Node, text: str) -> str:
        """SQL over the parent's columns (t1) as SQL over the node's own history, whose
        columns pass them through under names of their own (a temporal filter keeps
        the columns it re-reads as the clock moves)."""
        passed = {e: n for n, e in zip(node.columns, node.exprs)}
        mapping = {}
        for column in sqlglot.parse_one(text, read=DIALECT).find_all(exp.Column):
            if column.table == "t1":
                mine = passed.get(sql.Identifier("t1", column.name).as_string(None))
                if mine is None:
                    raise ValueError(f"node {node.id} does not keep column {column.name!r}")
                mapping[column.name] = exp.column(mine, table="t1", quoted=True)
        return substitute(text, {"t1": mapping}).sql(DIALECT)

    def _temporal(self, node: Node, parents: list[Node]) -> list[Step]:
        d = node.definition
        moved = sql.SQL("argus_clock_moved")
        if d["monotone"]:
            expired = " OR ".join(Bound(*b).failed() for b in d["bounds"])
        else:
            expired = "NOT coalesce(({}), false)".format(") AND (".join(d["clock_conjuncts"]))
        steps = [Step(render("select/expire", delta=node.delta, hist=node.hist,
                             columns=node.column_list, t1_columns=cols(node.columns, "t1"),
                             expired=sql.SQL(clock_once(self.own(node, expired))), t1=T1,
                             sign=SIGN_ID),
                      moved)]
        if not d["monotone"]:
            slots = self._slots(node)
            steps.append(Step(render("select/enter", delta=node.delta, parent=parents[0].hist,
                                     previous=sql.SQL(clock_once(
                                         at_previous_clock(d["predicate"]))),
                                     **{**slots, "hash_expr": row_hash(node.columns, "s")}),
                              moved))
        return steps

    def create(self, node, parents):
        if virtual(node):
            return self.views(node, parents[0])
        own = {e: n for n, e in zip(node.columns, node.exprs)}
        indexes = [sql.SQL("CREATE INDEX ON {} ({})").format(
                       node.hist, sql.Identifier(own[sql.Identifier("t1", b[0]).as_string(None)]))
                   for b in node.definition.get("bounds", [])]
        return [render("select/create", hist=node.hist, named_exprs=node.named_expr_list,
                       parent=parents[0].hist, t1=T1), *add_hash(node), *indexes,
                create_delta(node)]

    def views(self, node: Node, parent: Node) -> list[sql.Composed]:
        """A virtual selection's history and delta (select/create_view)."""
        slots = {"named_exprs": node.named_expr_list, "hash": expr_hash(node.exprs),
                 "predicate": self._slots(node)["predicate"], "t1": T1}
        return [render("select/create_view", view=node.hist, parent=parent.hist,
                       sign=sql.SQL(""), **slots),
                render("select/create_view", view=node.delta_table, parent=parent.delta,
                       sign=sql.SQL("{}.{}, ").format(T1, SIGN_ID), **slots)]

    def backfill(self, node, parents):
        if virtual(node):
            return []
        return [render("select/backfill", hist=node.hist, parent=parents[0].hist,
                       **self._slots(node))]

    def evaluate(self, node, parents):
        if virtual(node):
            return []  # its delta is a view; node_block counts it
        steps = [Step(render("select/delta", delta=node.delta, parent_delta=parents[0].delta,
                             **self._slots(node)), all_rows(parents[0]), dynamic=False)]
        if node.definition.get("temporal"):
            steps += self._temporal(node, parents)
        return steps

    def flush(self, node, parents):
        if virtual(node):
            return []
        if node.insert_only or not self.keyed(node, parents[0]):
            return bag_flush(node)
        when = sql.SQL("{} > 0").format(var(node.id))
        slots = {"hist": node.hist, "delta": node.delta, "sign": SIGN_ID,
                 "columns": node.column_list, "h_columns": cols(node.columns, "h"),
                 "d_columns": cols(node.columns, "d")}
        return [Step(render("select/flush_keyed_retract", **slots), when),
                Step(render("select/flush_keyed_insert", **slots), when, dynamic=False)]

    @staticmethod
    def keyed(node: Node, parent: Node) -> bool:
        """Its rows are distinct and it retracts only rows it holds: a non-temporal
        selection (HAVING) over an aggregate, passing the group keys through."""
        return (parent.kind == "aggregate" and not node.definition.get("temporal")
                and all(f'"t1"."{g}"' in node.exprs for g, _ in parent.definition["groups"]))


def purge_block(node: Node, children: list[Node], time_column: str | None = None
                ) -> sql.Composed | None:
    """Delete the rows of `node` that no consumer can need again: when every consumer is
    a selection with a lower time bound on one column it passes through from `node` —
    for a stream, its time column (a window on another column says nothing of what a
    later query on the time column needs). The horizon records the column. An
    aggregate's, a DISTINCT's or a set operation's rows are the state of its groups:
    a group that left a window may come back, and must come back counted."""
    if node.kind in ("aggregate", "distinct", "setop") or virtual(node) or not children:
        return None
    bounds_by_child = []
    for child in children:
        if not (child.kind == "select" and child.definition.get("monotone")):
            return None
        bounds_by_child.append([Bound(*b) for b in child.definition.get("bounds", [])
                                if b[0] in node.columns])
    common = set.intersection(*({b.column for b in bounds} for bounds in bounds_by_child))
    if time_column is not None:
        common &= {time_column}
    if not common:
        return None
    column = min(common)
    failed, horizons = [], []
    for bounds in bounds_by_child:
        mine = [b for b in bounds if b.column == column]
        failed.append("(" + " OR ".join(b.failed() for b in mine) + ")")
        horizons.append("greatest(" + ", ".join(f"({b.expr})" for b in mine) + ")")
    return render("node/purge", hist=node.hist,
                  failed=sql.SQL(clock_once(" AND ".join(failed))),
                  horizon=sql.SQL(clock_once("least(" + ", ".join(horizons) + ")")),
                  column=sql.Literal(column), id=sql.Literal(node.id))


# -- joins -----------------------------------------------------------------------------

def join_condition(node: Node, parents: list[Node]) -> str:
    """The join's condition as its statements run it: with its windows sargable on both
    sides (canon.sargable), so that a delta row probes the other side's index within
    its window instead of reading every row of its key."""
    types = {sql.Identifier(alias, c).as_string(None): t
             for alias, parent in zip(("t1", "t2"), parents)
             for c, t in zip(parent.columns, parent.types)}
    return sargable(node.definition["condition"], types.get)


class JoinCompiler:
    """Inner joins by the Rete rule; semi and anti joins (and the NULL-padded part of a
    left join) by counting each left row's partners before and after the deltas."""

    def _slots(self, node: Node, parents: list[Node], exprs=None) -> dict:
        return {**signed_slots(node), "condition": sql.SQL(join_condition(node, parents)),
                "named_exprs": named(exprs or node.exprs, node.columns)}

    def _padded(self, node: Node) -> tuple[str, ...]:
        """A left join's columns for a left row without partner: right side NULL."""
        return tuple(e if not e.startswith('"t2".') else f"CAST(NULL AS {t})"
                     for e, t in zip(node.exprs, node.types))

    def create(self, node, parents):
        left, right = parents
        if node.definition["kind"] in ("semi", "anti"):
            statement = render("select/create", hist=node.hist, parent=left.hist, t1=T1,
                               named_exprs=node.named_expr_list)
        else:
            statement = render("join/create", hist=node.hist, named_exprs=node.named_expr_list,
                               left=left.hist, right=right.hist, t1=T1, t2=T2)
        return [statement, *add_hash(node), create_delta(node)]

    def backfill(self, node, parents):
        left, right = parents
        kind = node.definition["kind"]
        statements = []
        if kind in ("inner", "left"):
            statements.append(render("join/backfill", hist=node.hist, left=left.hist,
                                     right=right.hist, **self._slots(node, parents)))
        if kind != "inner":
            exprs = self._padded(node) if kind == "left" else None
            statements.append(render("join/partners_backfill", hist=node.hist, left=left.hist,
                                     right=right.hist, **self._slots(node, parents, exprs),
                                     negate=sql.SQL("" if kind == "semi" else "NOT")))
        return statements

    def evaluate(self, node, parents):
        left, right = parents
        kind = node.definition["kind"]
        steps = []
        if kind in ("inner", "left"):
            slots = self._slots(node, parents)
            for lt, rt, sign_expr, when in (
                    (left.delta, right.hist, "t1", all_rows(left)),
                    (left.hist, right.delta, "t2", all_rows(right)),
                    (left.delta, right.delta, "t1 t2", all_rows(left, right))):
                signs = sql.SQL(" * ").join(sql.SQL("{}.{}").format(sql.Identifier(t), SIGN_ID)
                                            for t in sign_expr.split())
                steps.append(Step(render("join/term", delta=node.delta, left=lt, right=rt,
                                         sign_expr=signs, **slots), when))
        if kind != "inner":
            exprs = self._padded(node) if kind == "left" else None
            slots = self._slots(node, parents, exprs)
            present_when_matched = kind == "semi"
            growing = "_growing" if right.insert_only else ""
            steps.append(Step(render(f"join/partners_new_rows{growing}", delta=node.delta,
                                     left_delta=left.delta, right=right.hist,
                                     right_delta=right.delta,
                                     test=sql.SQL("> 0" if present_when_matched else "= 0"),
                                     negate=sql.SQL("" if present_when_matched else "NOT"),
                                     **slots), all_rows(left)))
            gained, lost = ("1", "-1") if present_when_matched else ("-1", "1")
            steps.append(Step(render(f"join/partners_changed{growing}", delta=node.delta,
                                     left=left.hist, right=right.hist, right_delta=right.delta,
                                     on_gained=sql.SQL(gained), on_lost=sql.SQL(lost), **slots),
                              all_rows(right)))
        return steps

    def flush(self, node, parents):
        return bag_flush(node)


# -- aggregates ------------------------------------------------------------------------

def grows(node: Node, parent: Node) -> bool:
    """The aggregate's input only grows: its parent is insert-only, or (definition
    "grows", set by the network) it regroups the books of an aggregate over such an
    input, whose groups never vanish, whose counts only rise and whose MIN/MAX books
    only move outward, although each change of a group reaches its children as a
    retraction and an insertion."""
    return parent.insert_only or bool(node.definition.get("grows"))


def parent_index_name(node_id: int) -> str:
    return f"argus_n{int(node_id)}_groups"


class AggregateCompiler:
    """GROUP BY with algebraic aggregates updated from bookkeeping columns
    (`argus.aggregates`): one history row per group, updated in place."""

    def _slots(self, model: Model) -> dict:
        global_ = model.is_global
        finals = [sql.SQL("{} AS {}").format(sql.SQL(s.final_over("n")), sql.Identifier(s.name))
                  for s in model.specs]
        return {
            "group_named": named(model.group_exprs, model.group_names),
            "group_by": sql.SQL("") if global_ else sql.SQL(" GROUP BY {}").format(
                sql.SQL(", ").join(map(sql.SQL, model.group_exprs))),
            "comma": sql.SQL("") if global_ else sql.SQL(", "),
            "f_columns": sql.SQL(", ").join(
                [sql.Identifier("n", g) for g in model.group_names] + finals
                + [sql.Identifier("n", "argus_n")]
                + [sql.Identifier("n", b.column) for _, b in model.books]),
            "keep": sql.SQL("TRUE" if global_ else '"n"."argus_n" > 0'),
            "t1": T1, "sign": SIGN_ID,
        }

    def _group_by(self, model: Model, alias: str) -> sql.Composable:
        if model.is_global:
            return sql.SQL("")
        return sql.SQL(" GROUP BY {}").format(cols(model.group_names, alias))

    def _same_group(self, model: Model, other: str) -> sql.Composable:
        """`other` (a CTE of per-group results) is dh's group: equal hashes, so that
        PostgreSQL hash-joins them, then equal values."""
        if model.is_global:
            return sql.SQL("TRUE")
        return same_row(model.group_names, other, "dh")

    def from_scratch(self, model: Model, parent: Node) -> sql.Composed:
        books = [sql.SQL(", {} AS {}").format(sql.SQL(b.over(s.arg, "1::smallint")),
                                              sql.Identifier(b.column)) for s, b in model.books]
        return render("aggregate/select", n_hash=row_hash(model.group_names, "n"),
                      book_backfill=sql.SQL("").join(books), parent=parent.hist,
                      **self._slots(model))

    def _values(self, model: Model, spec: Spec, source: sql.Identifier,
                count: str) -> sql.Composed:
        """(group, value) pairs of COUNT(DISTINCT value) with their signed counts."""
        return render("aggregate/values", group_named=named(model.group_exprs, model.group_names),
                      comma=sql.SQL("") if model.is_global else sql.SQL(", "),
                      x=sql.SQL(spec.arg), hash=expr_hash(model.group_exprs + [f"({spec.arg})"]),
                      count=sql.SQL(count), source=source, t1=T1,
                      group_exprs=sql.SQL(", ").join(map(sql.SQL, model.group_exprs)))

    def create(self, node, parents):
        model, parent = Model.of(node.definition), parents[0]
        # fillfactor 50: groups are updated in place; free room in each page makes those
        # updates HOT, so the page's dead versions are pruned without waiting for VACUUM
        out = [sql.SQL("CREATE TABLE {} WITH (fillfactor = 50) AS {} WITH NO DATA").format(
                   node.hist, self.from_scratch(model, parent)),
               sql.SQL("CREATE INDEX ON {} (argus_hash)").format(node.hist),
               create_delta(node), self.tid_column(node)]
        for spec in model.distinct_specs:
            out.append(render("aggregate/aux_create", aux=node.aux(f"d{spec.index}"),
                              x=sql.SQL(spec.arg), parent=parent.hist,
                              **{k: v for k, v in self._slots(model).items()
                                 if k in ("group_named", "comma", "t1")}))
        return out + self.parent_index(node, parent)

    @staticmethod
    def tid_column(node: Node) -> sql.Composed:
        """The delta's rows carry the ctid of the group's row they change (delta.sql)."""
        return sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS argus_ctid tid").format(
            node.delta_table)

    @staticmethod
    def parent_index(node: Node, parent: Node) -> list[sql.Composable]:
        """MIN/MAX under retraction re-read the parent's rows of the affected groups."""
        model = Model.of(node.definition)
        if not (model.group_exprs and not grows(node, parent) and model.has_extremes) \
                or virtual(parent):  # a view: its aggregate's groups are few
            return []
        return [render("aggregate/parent_index", name=sql.Identifier(parent_index_name(node.id)),
                       parent=parent.hist,
                       hash=expr_hash([unqualified(e) for e in model.group_exprs]))]

    def backfill(self, node, parents):
        model, parent = Model.of(node.definition), parents[0]
        out = [sql.SQL("INSERT INTO {} ({}) {}").format(
            node.hist, cols(model.stored + ["argus_hash"]), self.from_scratch(model, parent))]
        for spec in model.distinct_specs:
            out.append(render("aggregate/aux_backfill", aux=node.aux(f"d{spec.index}"),
                              key=cols(model.group_names + ["v"]),
                              values=self._values(model, spec, parent.hist, "1")))
        return out

    def _combine(self, node: Node, model: Model, spec: Spec, book: Book, parent: Node):
        """(merged bookkeeping column, extra CTE, its join) for one book."""
        b, k = sql.Identifier(book.column), spec.index
        if book.combine == "add":
            return sql.SQL(", CASE WHEN dh.{b} IS NULL THEN o.{b} WHEN o.{b} IS NULL THEN dh.{b} "
                           "ELSE o.{b} + dh.{b} END AS {b}").format(b=b), None
        if book.combine == "distinct":
            cte = sql.Identifier(f"cd{k}")
            gnames = model.group_names
            return (sql.SQL(", coalesce(o.{b}, 0) + coalesce({cte}.c, 0) AS {b}").format(
                        b=b, cte=cte),
                    render("aggregate/count_distinct", k=sql.SQL(str(k)),
                           comma=sql.SQL("") if model.is_global else sql.SQL(", "),
                           x_groups=cols(gnames, "x"), x_hash=row_hash(gnames, "x"),
                           aux=node.aux(f"d{spec.index}"),
                           values=self._values(model, spec, parent.delta, "t1.argus_sign"),
                           a_key=cols(gnames + ["v"], "a"), dd_key=cols(gnames + ["v"], "dd"),
                           x_group_by=self._group_by(model, "x")))
        extreme = sql.SQL("least" if book.combine == "min" else "greatest")
        if grows(node, parent):  # extremes only move outward: old vs inserted
            return sql.SQL(", {f}(o.{b}, dh.{b}) AS {b}").format(f=extreme, b=b), None
        cte = sql.Identifier(f"mm{k}")
        affected = (sql.SQL("EXISTS (SELECT 1 FROM dh WHERE dh.argus_r > 0)") if model.is_global
                    else sql.SQL("{} IN (SELECT dh.argus_hash FROM dh WHERE dh.argus_r > 0)")
                    .format(expr_hash(model.group_exprs)))
        return (sql.SQL(", CASE WHEN dh.argus_r > 0 THEN {cte}.v ELSE {f}(o.{b}, dh.{b}) END "
                        "AS {b}").format(cte=cte, f=extreme, b=b),
                render("aggregate/minmax", k=sql.SQL(str(k)),
                       comma=sql.SQL("") if model.is_global else sql.SQL(", "),
                       w_groups=cols(model.group_names, "w"),
                       w_hash=row_hash(model.group_names, "w"),
                       u_groups=cols(model.group_names, "u"),
                       func=sql.SQL(book.combine), x=sql.SQL(book.value), parent=parent.hist,
                       parent_delta=parent.delta, affected=affected,
                       group_named=named(model.group_exprs, model.group_names),
                       t1=T1, sign=SIGN_ID, w_group_by=self._group_by(model, "w")))

    def evaluate(self, node, parents):
        model, parent = Model.of(node.definition), parents[0]
        deltas, merges, ctes, joins = [], [], [], []
        for spec, book in model.books:
            merge, cte = self._combine(node, model, spec, book, parent)
            merges.append(merge)
            if book.combine != "distinct":
                deltas.append(sql.SQL(", {} AS {}").format(
                    sql.SQL(book.over(spec.arg, '"t1"."argus_sign"')), sql.Identifier(book.column)))
            if cte is not None:
                ctes.append(cte)
                name = f"{'cd' if book.combine == 'distinct' else 'mm'}{spec.index}"
                joins.append(sql.SQL(" LEFT JOIN {} ON {}").format(
                    sql.Identifier(name), self._same_group(model, name)))
        gnames, stored = model.group_names, model.stored

        def changed(this: str, other: str) -> sql.Composable:
            if grows(node, parent):  # every group in the delta gained rows: it changed
                return sql.SQL("")
            return sql.SQL("\n") + render("aggregate/changed", this=sql.Identifier(this),
                                          other=sql.Identifier(other),
                                          this_stored=cols(stored, this),
                                          other_stored=cols(stored, other))

        statement = render(
            "aggregate/delta", delta=node.delta, stored=cols(stored), hist=node.hist,
            book_delta=sql.SQL("").join(deltas), parent_delta=parent.delta,
            d_hash=row_hash(gnames, "d"), dh_groups=cols(gnames, "dh"),
            match_h=sql.SQL("TRUE") if model.is_global else same_row(gnames, "h", "dh"),
            match_o=sql.SQL("TRUE") if model.is_global else same_row(gnames, "o", "dh"),
            ctes=sql.SQL("").join(sql.SQL(", ") + cte for cte in ctes),
            book_merge=sql.SQL("").join(merges), joins=sql.SQL("").join(joins),
            o_stored=cols(stored, "o"), f_stored=cols(stored, "f"),
            o_changed=changed("o", "f"), f_changed=changed("f", "o"), **self._slots(model))
        return [Step(statement)]

    def flush(self, node, parents):
        """One row per group: update changed groups in place, insert new ones, delete
        the ones that vanished; then the COUNT(DISTINCT) per-value counts."""
        model, parent = Model.of(node.definition), parents[0]
        gnames, stored = model.group_names, model.stored
        slots = {"hist": node.hist, "delta": node.delta, "sign": SIGN_ID,
                 "stored": cols(stored), "d_stored": cols(stored, "d")}
        when = sql.SQL("{} > 0").format(var(node.id))
        steps = [Step(render("aggregate/flush_update", **slots), when)]
        if not model.is_global:  # a global aggregate's one row never appears or vanishes
            steps.append(Step(render("aggregate/flush_insert", **slots), when))
            if not grows(node, parent):  # groups vanish only when rows leave
                steps.append(Step(render("aggregate/flush_delete", **slots), when))
        for spec in model.distinct_specs:
            steps.append(Step(render(
                "aggregate/aux_flush", aux=node.aux(f"d{spec.index}"),
                values=self._values(model, spec, parent.delta, "t1.argus_sign"),
                a_key=cols(gnames + ["v"], "a"), d_key=cols(gnames + ["v"], "d"),
                key=cols(gnames + ["v"])), any_rows(parent)))
        return steps


# -- DISTINCT and set operations -----------------------------------------------------

class DistinctCompiler:
    """One history row per value with its multiplicity (argus_count)."""

    def _slots(self, node: Node) -> dict:
        names = node.columns
        return {"columns": cols(names), "named": named(cols_sql(names, "t1"), names),
                "t1_columns": cols(names, "t1"), "hash": row_hash(names, "t1"),
                "h_columns": cols(names, "h"), "d_columns": cols(names, "d"),
                "x_columns": cols(names, "x"), "t1": T1, "sign": SIGN_ID}

    def create(self, node, parents):
        return [render("distinct/create", hist=node.hist, parent=parents[0].hist,
                       **self._slots(node)), create_delta(node)]

    def backfill(self, node, parents):
        return [render("distinct/backfill", hist=node.hist, parent=parents[0].hist,
                       **self._slots(node))]

    def evaluate(self, node, parents):
        return [Step(render("distinct/delta", delta=node.delta, hist=node.hist,
                            parent_delta=parents[0].delta, **self._slots(node)))]

    def flush(self, node, parents):
        return [Step(render("distinct/flush", hist=node.hist, parent_delta=parents[0].delta,
                            **self._slots(node)), any_rows(parents[0]))]


def cols_sql(names, prefix: str) -> list[str]:
    return [f'"{prefix}"."{n}"' for n in names]


_MULTIPLICITY = {
    "intersect": "CASE WHEN {a} > 0 AND {b} > 0 THEN 1 ELSE 0 END",
    "intersect_all": "least({a}, {b})",
    "except": "CASE WHEN {a} > 0 AND {b} = 0 THEN 1 ELSE 0 END",
    "except_all": "greatest({a} - {b}, 0)",
}


class SetOpCompiler:
    """UNION ALL as a bag; INTERSECT / EXCEPT (and ALL) by counting each value's copies
    in both inputs (aux table) and emitting the change of the output multiplicity.
    Each input's columns are the ones the definition names (a shared parent may have
    more), matched by position."""

    @staticmethod
    def _source_columns(node: Node, side: str, source: Node) -> list[str]:
        return node.definition.get(side) or list(source.columns)

    def _cast(self, node: Node, side: str, source: Node, alias: str) -> sql.Composed:
        return sql.SQL(", ").join(
            sql.SQL("CAST({} AS {}) AS {}").format(sql.Identifier(alias, s), sql.SQL(t),
                                                   sql.Identifier(n))
            for s, t, n in zip(self._source_columns(node, side, source), node.types,
                               node.columns))

    def _named(self, node: Node, side: str, source: Node, alias: str) -> sql.Composed:
        return sql.SQL(", ").join(sql.SQL("{} AS {}").format(sql.Identifier(alias, s),
                                                             sql.Identifier(n))
                                  for s, n in zip(self._source_columns(node, side, source),
                                                  node.columns))

    def _counts(self, node: Node, left_src, right_src, lcount: str, rcount: str,
                parents) -> sql.Composed:
        left, right = parents
        return render("setop/counts", u_columns=cols(node.columns, "u"),
                      hash=row_hash(node.columns, "u"),
                      left_cast=self._cast(node, "left", left, "t1"),
                      right_cast=self._cast(node, "right", right, "t2"),
                      left_count=sql.SQL(lcount), right_count=sql.SQL(rcount),
                      left=left_src, right=right_src, t1=T1, t2=T2)

    def create(self, node, parents):
        left, right = parents
        union_all = node.definition["op"] == "union_all"
        template = "setop/create_union_all" if union_all else "setop/create"
        return [render(template, hist=node.hist, aux=node.aux("counts"),
                       left_named=self._named(node, "left", left, "t1"),
                       right_named=self._named(node, "right", right, "t2"),
                       left=left.hist, right=right.hist, t1=T1, t2=T2),
                *add_hash(node), create_delta(node)]

    def backfill(self, node, parents):
        left, right = parents
        op = node.definition["op"]
        if op == "union_all":
            return [render("setop/union_all_backfill", hist=node.hist, left=left.hist,
                           right=right.hist, left_cast=self._cast(node, "left", left, "t1"),
                           right_cast=self._cast(node, "right", right, "t1"),
                           **signed_slots(node))]
        m = sql.SQL(_MULTIPLICITY[op].format(a='"a"."argus_ca"', b='"a"."argus_cb"'))
        slots = signed_slots(node)
        return [render("setop/backfill", hist=node.hist, aux=node.aux("counts"),
                       columns=node.column_list, c_columns=cols(node.columns, "c"),
                       counts=self._counts(node, left.hist, right.hist, "1", "1", parents),
                       hash_column=slots["hash_column"], a_columns=cols(node.columns, "a"),
                       a_hash=sql.SQL(", a.argus_hash") if not node.insert_only else sql.SQL(""),
                       m_aux=m)]

    def evaluate(self, node, parents):
        left, right = parents
        op = node.definition["op"]
        if op == "union_all":
            return [Step(render("setop/union_all", delta=node.delta, source=src.delta,
                                cast=self._cast(node, side, src, "t1"), **signed_slots(node)),
                         all_rows(src), dynamic=False)
                    for side, src in (("left", left), ("right", right))]
        fm = _MULTIPLICITY[op]
        counts = self._counts(node, left.delta, right.delta, "t1.argus_sign", "t2.argus_sign",
                              parents)
        slots = signed_slots(node)
        return [Step(render(
            "setop/delta", delta=node.delta, columns=node.column_list,
            hash_column=slots["hash_column"], sign=SIGN_ID,
            x_columns=cols(node.columns, "x"),
            x_hash=sql.SQL(", x.argus_hash") if not node.insert_only else sql.SQL(""),
            m_old=sql.SQL(fm.format(a="y.oa", b="y.ob")),
            m_new=sql.SQL(fm.format(a="(y.oa + y.da)", b="(y.ob + y.db)")),
            counts=counts, aux=node.aux("counts"), a_columns=cols(node.columns, "a"),
            c_columns=cols(node.columns, "c")))]

    def flush(self, node, parents):
        left, right = parents
        steps = bag_flush(node)
        if node.definition["op"] != "union_all":
            counts = self._counts(node, left.delta, right.delta, "t1.argus_sign",
                                  "t2.argus_sign", parents)
            steps.append(Step(render("setop/flush", aux=node.aux("counts"), counts=counts,
                                     a_columns=cols(node.columns, "a"),
                                     c_columns=cols(node.columns, "c"),
                                     columns=node.column_list), any_rows(left, right)))
        return steps


COMPILERS: dict[str, Compiler] = {
    "stream": StreamCompiler(),
    "select": SelectCompiler(),
    "join": JoinCompiler(),
    "aggregate": AggregateCompiler(),
    "distinct": DistinctCompiler(),
    "setop": SetOpCompiler(),
}


# -- the assembled cycle program ---------------------------------------------------

def _step_code(step: Step, conn, counted: bool = False) -> sql.Composable:
    statement = step.statement
    if counted:
        statement = render("program/counted", statement=statement, sign=SIGN_ID)
    if step.dynamic:
        return sql.SQL("EXECUTE {}").format(sql.Literal(statement.as_string(conn)))
    return statement


def per_claim(parents: list[Node], code: Callable[[list[Node]], sql.Composed], conn
              ) -> sql.Composed:
    """Code that reads a stream's claimed rows, compiled for both places they can be:
    the inbox after a locked claim, the stream's delta table after any other (so that
    PostgreSQL plans each over one plain table)."""
    copied = code(parents)
    if any(p.kind == "stream" for p in parents):
        locked = code(list(map(in_inbox, parents)))
        if locked.as_string(conn) != copied.as_string(conn):
            return render("program/claimed_where", locked=locked, copied=copied)
    return copied


def node_block(node: Node, parents: list[Node], conn) -> sql.Composed | None:
    steps = COMPILERS[node.kind].evaluate(node, parents)
    if virtual(node):
        code = render("select/count_view", delta=node.delta, sign=SIGN_ID)
    elif not steps:
        return None
    else:
        signed = not node.insert_only
        code = per_claim(parents, lambda parents: sql.SQL("\n").join(
            render("program/step_signed" if signed else "program/step",
                   condition=step.condition or sql.SQL("TRUE"),
                   statement=_step_code(step, conn, counted=signed), var=var(node.id))
            for step in COMPILERS[node.kind].evaluate(node, parents)), conn)
    counts = render("program/count_signed" if not node.insert_only else "program/count_insert_only",
                    var=var(node.id))
    condition = any_rows(*_unique(parents))
    if node.definition.get("temporal"):
        condition = sql.SQL("{} OR argus_clock_moved").format(condition)
    return render("program/node_block", condition=condition, body=code,
                  counts=counts, id=sql.Literal(node.id),
                  analyze=sql.SQL("") if virtual(node) else analyze_delta(node))


def probe_block(node: Node, parents: list[Node], conn) -> sql.Composed | None:
    """The code that diagnoses the node after one of its statements failed: each
    input's changes, row by row, against the node's expressions over one row (a
    selection's predicate and columns, an aggregate's groups and arguments, a join's
    condition and columns against the other input's history), so that the failure can
    name the row. None where no row-level expression can fail (DISTINCT, set
    operations: their columns pass through)."""
    d = node.definition
    if node.kind == "select":
        sides = [(T1, 0, None, [d.get("predicate") or "TRUE", *node.exprs])]
    elif node.kind == "aggregate":
        model = Model.of(d)
        sides = [(T1, 0, None, model.group_exprs + [s.arg for s in model.specs if s.arg]
                  or ["TRUE"])]
    elif node.kind == "join":
        condition = join_condition(node, parents)
        sides = [(T1, 0, 1, list(node.exprs)), (T2, 1, 0, list(node.exprs))]
    else:
        return None

    def code(parents: list[Node]) -> sql.Composed:
        searches = []
        for row, mine, other, exprs in sides:
            partners = sql.SQL("") if other is None else sql.SQL(" FROM {} AS {} WHERE {}").format(
                parents[other].hist, T2 if row == T1 else T1, sql.SQL(condition))
            searches.append(render(
                "program/probe_search", row=row, source=parents[mine].delta,
                exprs=sql.SQL(", ").join(sql.SQL("({})").format(sql.SQL(e)) for e in exprs),
                partners=partners, what=sql.Literal(_describe_input(parents[mine]))))
        return render("program/probe_block", condition=any_rows(*_unique(parents)),
                      searches=sql.SQL("\n").join(searches))

    return per_claim(parents, code, conn)


def _describe_input(node: Node) -> str:
    if node.kind == "stream":
        return f"row of stream {node.hist_ref[1]}"
    return f"row of node {node.id}"


def analyze_delta(node: Node) -> sql.Composed:
    return render("program/analyze_delta", var=var(node.id), delta=node.delta_table,
                  name=sql.Literal(node.delta_table.as_string(None)))


def aux_tables(node: Node) -> list[sql.Identifier]:
    """The tables a node keeps besides its history: per-value counts."""
    if node.kind == "aggregate":
        return [node.aux(f"d{s.index}") for s in Model.of(node.definition).distinct_specs]
    if node.kind == "setop" and node.definition["op"] != "union_all":
        return [node.aux("counts")]
    return []


def rebuildable(node: Node) -> bool:
    """Signed nodes may rebuild their history instead of applying a cycle's changes
    (catalog/003); an insert-only node's changes are an append, never dearer."""
    return node.kind != "stream" and not node.insert_only and not virtual(node)


def rebuild(node: Node, parents: list[Node]) -> list[sql.Composable]:
    """The node's tables emptied and refilled from its parents' (already maintained)
    histories by its own from-scratch SQL: the statements that backfilled it."""
    return ([sql.SQL("DELETE FROM {}").format(t) for t in [node.hist, *aux_tables(node)]]
            + COMPILERS[node.kind].backfill(node, parents))


def flush_block(node: Node, parents: list[Node], conn) -> sql.Composed | None:
    """Maintain the node's history at the end of the cycle, timed: apply the delta, or
    rebuild when argus.choose_maintenance chose it for this node and cycle. None: the
    history is a view (`virtual`), nothing to maintain."""
    steps = COMPILERS[node.kind].flush(node, parents)
    if not steps:
        return None
    apply = per_claim(parents, lambda parents: sql.SQL("\n").join(
        render("program/flush_step", condition=step.condition or sql.SQL("TRUE"),
               statement=_step_code(step, conn))
        for step in COMPILERS[node.kind].flush(node, parents)), conn)
    conditions = [step.condition for step in steps]
    condition = (sql.SQL("TRUE") if None in conditions else sql.SQL(" OR ").join(
        map(sql.SQL, dict.fromkeys(c.as_string(conn) for c in conditions))))
    if rebuildable(node):
        apply = render("program/rebuild_or_apply", id=sql.Literal(node.id), apply=apply,
                       rebuild=sql.SQL("\n").join(
                           sql.SQL("        EXECUTE {};").format(
                               sql.Literal(s.as_string(conn))) for s in rebuild(node, parents)))
    return render("program/flush_block", condition=condition, body=apply,
                  id=sql.Literal(node.id))



def _unique(nodes: list[Node]) -> list[Node]:
    seen, out = set(), []
    for n in nodes:
        if n.id not in seen:
            seen.add(n.id)
            out.append(n)
    return out


# The program's frame is rendered here, with PostgreSQL format() placeholders where the
# nodes' code goes (literal % doubled): argus.assemble_program() fills it in the
# database (catalog/004), `fill` in Python for the code a change must validate.
_SLOTS = ("declarations", "evaluate", "signed", "flush", "purge")


def frame(streams: list[tuple[str, Node, str | None]],
          left: frozenset[str] = frozenset()) -> str:
    """argus_net.cycle_program's body around the nodes' code: claim the streams' inboxes,
    evaluate, choose how to maintain the signed nodes (if any), flush, purge, release
    the inboxes. `left`: the streams whose rows a locked claim leaves in the inbox (see
    `claim`); every other stream's are copied to its delta table, which outlives the
    cycle (a query's changes view reads it)."""
    claim_code = release_code = sql.SQL("")
    if streams:
        inboxes = [stream_inbox(name) for name, _, _ in streams]
        large = sql.SQL(" OR ").join(
            sql.SQL("pg_relation_size({}::regclass) > argus_inbox_limit").format(
                sql.Literal(inbox.as_string(None))) for inbox in inboxes)

        names = [name for name, _, _ in streams]
        claim_code = render("program/claim_block", claim=claim(streams),
                            claim_locked=claim(streams, locked=True, left=left),
                            inboxes=sql.SQL(", ").join(inboxes), large=large,
                            vars=sql.SQL(", ").join(var(n.id) for _, n, _ in streams),
                            analyze=sql.SQL("\n").join(analyze_delta(n) for _, n, _ in streams),
                            ids=sql.SQL(", ").join(sql.Literal(n.id) for _, n, _ in streams),
                            names=sql.SQL(", ").join(sql.Literal(s) for s in names),
                            count=sql.Literal(len(streams)))
        release_code = render("program/release_block", inboxes=sql.SQL(", ").join(inboxes))
    marks = {slot: f"@argus_slot_{slot}@" for slot in _SLOTS}
    text = render("program/cycle_program", claim=claim_code, release=release_code,
                  **{slot: sql.SQL(mark) for slot, mark in marks.items()}).as_string(None)
    text = text.replace("%", "%%")
    for position, slot in enumerate(_SLOTS, 1):
        text = text.replace(marks[slot], f"%{position}$s")
    return text


def fill(frame_text: str, node_ids: list[int], blocks: list[str], signed: bool,
         flushes: list[str], purges: list[str], initial: int = 0) -> str:
    """The frame filled as argus.assemble_program() fills it (PostgreSQL's format())."""
    values = ["\n".join(f"    {var(i).as_string(None)} bigint := {initial};" for i in node_ids),
              "\n".join(blocks), "true" if signed else "false", "\n".join(flushes),
              "\n".join(purges)]
    return re.sub(r"%(?:%|(\d)\$s)",
                  lambda m: values[int(m[1]) - 1] if m[1] else "%", frame_text)
