"""What every node kind shares: the `Node` a network holds, the `Step`s a compiler
emits, the `Compiler` protocol and small SQL builders.

Two paths: an insert-only node (every input append-only, an operator that only adds
rows) appends its delta to its history. A node on the signed path (aggregates, left,
anti joins, EXCEPT, and everything downstream of them) receives and emits -1 rows; its
history carries argus_hash, a hash of each row's value, so that a retraction removes
exactly the copies it names.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from psycopg import sql
from sqlglot import exp

from .. import abi
from ..names import SIGN, node_delta, std_alias, stream_inbox
from ..templates import render
from ..trees import DIALECT, tree_of


T1 = sql.Identifier(std_alias(1))
T2 = sql.Identifier(std_alias(2))
SIGN_ID = sql.Identifier(SIGN)
NETWORK = "argus_net"
# The version of the code compiled into argus_catalog.nodes (cycle_block, flush_block).
# Bump it when a template or compiler changes what it emits: argus recompiles stored
# code older than this when it connects (argus.network.stored.recompile_stale).
CODE_VERSION = 76

# How a node keeps its rows, apart from what it computes (Node.layout, not
# Node.definition, and never in its signature): its history a view of its parents'
# ("virtual"), computed only when a consumer needs it ("deferred") or built lazily by a
# JISC migration ("lazy"); the indexes its probes use; the rows past which it fails
# ("bound"); that its rows expire by themselves ("expiry": nodes/expiry); and what
# its parent's growth lets an aggregate skip ("grows", "counted", "outward":
# network.reshape.growing).
LAYOUT = frozenset({"virtual", "deferred", "lazy", "indexes", "bound", "expiry", "grows",
                    "counted", "outward"})


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
    definition: dict = field(default_factory=dict, compare=False)  # what it computes
    layout: dict = field(default_factory=dict, compare=False)  # how it keeps it: LAYOUT
    insert_only: bool = True
    types: tuple[str, ...] = ()  # PostgreSQL types of `columns`, once the table exists
    claimed_in_inbox: bool = field(default=False, compare=False)  # see `in_inbox`
    # compiled as a parent whose table Citus holds (network.stored.store_blocks): a join
    # does not probe it by LATERAL, which Citus cannot push down (nodes/join)
    on_workers: bool = field(default=False, compare=False)
    # on Citus, the column its distributed history is sharded by (argus.citus.shard)
    sharded_by: str | None = field(default=None, compare=False)

    @functools.cached_property
    def spec(self):
        """The kind's typed definition (SelectSpec, JoinSpec, Model, …), read once; with
        its layout, which a kind reads where what it stores depends on it (an
        aggregate's MIN/MAX "counted": aggregates.Model)."""
        return KINDS[self.kind].spec({**self.definition, **self.layout})

    @property
    def kind_of(self) -> Kind:
        """What its kind is and does (the only place that knows a kind)."""
        return KINDS[self.kind]

    @property
    def loaded(self) -> bool:
        return KINDS[self.kind].loaded

    def typed(self, alias: str = "t1") -> dict[tuple[str, str], str]:
        """Its columns' types as an expression over it names them (failures.never_fails)."""
        return {(alias, c): t for c, t in zip(self.columns, self.types)}

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
    ctes: sql.Composable | None = None  # top-level CTEs before it (data-modifying ones)
    sign: int | None = None  # the sign of every row it writes, if one: counted by ROW_COUNT


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
    """An expression over t1 as an index expression: without the table qualifier (a
    collation's schema is no table's: `q COLLATE public.ci` keeps it; found by a helper)."""

    tree = tree_of(expr)
    for column in tree.find_all(exp.Column):
        if not (isinstance(column.parent, exp.Collate) and column.arg_key == "expression"):
            column.set("table", None)
    return tree.sql(dialect=DIALECT)


def var(node_id: int) -> sql.SQL:
    """Where the program holds the rows node `node_id` wrote to its delta: an element of
    one array, not a variable per node (PL/pgSQL looks every identifier of a statement
    up among the variables, one by one: a thousand of them made compiling the program
    and preparing its statements quadratic in the network's size)."""
    return abi.at(abi.WRITTEN, node_id)


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


@dataclass(frozen=True)
class Probe:
    """Where a failed node looks for the row it failed on: each row of input `source`'s
    changes, as `row`, against `exprs` (the node's expressions over one row) — for a
    join, with each partner of the other input's history (`partners`, by `condition`)."""

    row: sql.Identifier
    source: int
    exprs: list[str]
    partners: int | None = None
    condition: str | None = None


def _no_tables(node: Node) -> list[sql.Identifier]:
    return []


def _own_delta(node: Node) -> sql.Composable:
    return node.delta


def _copies_nothing(node: Node, column: str) -> tuple[int, str] | None:
    return None


def passed_on(node: Node, column: str) -> tuple[int, str] | None:
    """(the parent's index, its column) where the node's column is a parent's column as
    it is; None if it is computed."""
    if column not in node.columns:
        return None
    expr = tree_of(node.exprs[node.columns.index(column)])
    if not isinstance(expr, exp.Column) or not expr.table.startswith("t"):
        return None
    parent = int(expr.table[1:]) - 1
    return (parent, expr.name) if 0 <= parent < len(node.parents) else None


def always(node: Node) -> bool:
    return True


def never(node: Node) -> bool:
    return False


@dataclass(frozen=True)
class Kind:
    """What a node kind is, in one place (its module registers it): how it reads its
    stored definition (a JSON object in argus_catalog.nodes) as its typed one
    (`Node.spec`), its compiler, how `argus explain` describes a node of it, whether a
    node's rows are state, which purging never deletes (a group that left a window may
    come back, and must come back counted; a partition's top rows rank the new ones),
    where a failed node of it looks for the row it failed on (None: no row-level
    expression of it can fail), and the tables it keeps besides its history.

    What other layers ask of a node, they ask here, never by its kind's name: whether
    its rows are `loaded` (a stream's, the network's sources) rather than computed from
    parents; whether it `selects` (filters and projects one parent's rows), `joins`
    (pairs two parents' rows; an `inner_join` among them) or `groups` (one row per
    group of its parent's rows); the (rank column, k) of the rows it keeps if it keeps
    each partition's top k (`top_k`); whether its rows change as the clock moves
    (`clock_driven`), or leave a sliding window (`slides`); the relation a query whose
    output it is reads its changes from (`changes`); whether the argus_hash its history
    and delta hold is its whole row's (`row_hashed`: row_hash of its columns, which a
    reader may take instead of hashing the row again); whether it `hashes_rows` (and its
    `aux_tables`' rows) even when no row of it is ever retracted; the columns it keeps in
    the form of the first copy of equal values (`first_forms`: numeric 0.000 and 0 are
    one group, one DISTINCT row); which parent's column one of its
    columns passes on (`copies`: where a sharding key comes from) and the columns its
    history may be sharded by (`shard_keys`, none if it may not be: network.shards);
    what its history is when it is a view (`as_view`); and its box in `argus picture`
    (its `symbol` and first described line, or its own `label`)."""

    name: str
    spec: Callable[[dict], object]
    compiler: Compiler
    describe: Callable[[Node], list[str]]
    keeps_state: Callable[[Node], bool] = never
    probe: Callable[[Node, list[Node]], list[Probe]] | None = None
    aux_tables: Callable[[Node], list[sql.Identifier]] = _no_tables
    loaded: bool = False
    selects: bool = False
    joins: bool = False
    groups: bool = False
    hashes_rows: bool = False  # tells its rows apart by their hash, even insert-only
    first_forms: Callable[[Node], tuple[str, ...]] = lambda node: ()
    top_k: Callable[[Node], tuple[str, int] | None] = lambda node: None
    inner_join: Callable[[Node], bool] = never
    row_hashed: Callable[[Node], bool] = never
    clock_driven: Callable[[Node], bool] = never
    slides: Callable[[Node], bool] = never
    changes: Callable[[Node], sql.Composable] = _own_delta
    copies: Callable[[Node, str], tuple[int, str] | None] = _copies_nothing
    shard_keys: Callable[[Node], tuple[str, ...]] = lambda node: ()
    as_view: str = "its parent's rows it passes"
    symbol: str = ""
    label: Callable[[Node], str] | None = None


KINDS: dict[str, Kind] = {}


def register_kind(kind: Kind) -> Kind:
    KINDS[kind.name] = kind
    return kind


class Compiler(Protocol):
    def create(self, node: Node, parents: list[Node]) -> list[sql.Composable]: ...

    def backfill(self, node: Node, parents: list[Node]) -> list[sql.Composable]: ...

    def evaluate(self, node: Node, parents: list[Node]) -> list[Step]: ...

    def flush(self, node: Node, parents: list[Node]) -> list[Step]: ...


def virtual(node: Node) -> bool:
    """The node keeps no table of its rows: its history is a view over its parents'
    (conditional materialization, network.builder): a selection's (select/create_view),
    or an inner join's (join/create_view)."""
    return bool(node.layout.get("virtual"))


def delta_view(node: Node) -> bool:
    """The node's delta is a view of its parent's too: a virtual selection's. (A
    virtual join computes its delta each cycle like any join; only its history is a
    view.)"""
    return node.kind == "select" and virtual(node)


def create_delta(node: Node) -> sql.Composed:
    return render("node/create_delta", delta=node.delta_table, hist=node.hist, sign=SIGN_ID)


def tid_scan(delta: sql.Composable, sign: str) -> sql.Composed:
    """The history's rows (h) a flush changes, as a TID scan of the ctids the delta's
    rows of that sign carry (`h.ctid = ANY(ARRAY(…))`): PostgreSQL would otherwise join
    the delta with a scan of the whole history (a join on ctid gets no parameterized
    TID scan)."""
    return sql.SQL(" AND h.ctid = ANY(ARRAY(SELECT argus_ctid FROM {} WHERE {} {} 0 "
                   "AND argus_ctid IS NOT NULL))").format(delta, SIGN_ID, sql.SQL(sign))


def tid_column(node: Node) -> sql.Composed:
    """The delta's rows carry the ctid of the history's row they change (aggregate,
    window)."""
    return sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS argus_ctid tid").format(
        node.delta_table)


def probe_index(node: Node, columns: list[str]) -> sql.Composed:
    """An index on the node's history for equality probes on `columns`: a B-tree, or a
    hash index where a value may be too long for a B-tree's entry (argus.probe_index)."""
    return sql.SQL("SELECT argus.probe_index({}::regclass, ARRAY[{}]::text[])").format(
        sql.Literal(node.hist.as_string(None)), sql.SQL(", ").join(map(sql.Literal, columns)))


def add_hash(node: Node, indexed: bool = True) -> list[sql.Composable]:
    """argus_hash on a signed node's history; `indexed` unless its flush deletes by ctid
    (an index of random hashes is the dearest one to keep: ~2 µs a row)."""
    if node.insert_only:
        return []
    return [render("node/add_hash", hist=node.hist),
            *([render("node/hash_index", hist=node.hist)] if indexed else [])]


# Types whose equal values are the same value (their equality compares bytes), as
# format_type spells them without a typmod: a row of them needs no more than equality to
# be told apart from another. Not numeric (2.00 and 2), float (0 and -0), interval (1 day
# and 24 hours), jsonb, arrays. Text-like types only under a deterministic collation.
IDENTICAL_WHEN_EQUAL = frozenset("""smallint integer bigint boolean date bytea uuid oid
    """.split()) | {"timestamp without time zone", "timestamp with time zone",
                    "time without time zone"}
TEXT_LIKE = frozenset({"text", "character varying", '"char"', "name"})
_TYPMOD = re.compile(r"\(\d+\)")


def identical_when_equal(pg_type: str, text: bool = True) -> bool:
    """Are equal values of this type the same value? `text`: take text-like types to
    have a deterministic collation (argus's flushes do; a deferred join's changes do
    not, argus.nodes.join)."""
    bare = _TYPMOD.sub("", pg_type)
    return bare in IDENTICAL_WHEN_EQUAL or text and bare in TEXT_LIKE


def _identity(names, types) -> list[str]:
    """The columns whose equal values can differ: all of them where the types are
    unknown."""
    if len(types) != len(names):
        return list(names)
    return [n for n, t in zip(names, types) if not identical_when_equal(t)]


def bag_flush(node: Node, names=None) -> list[Step]:
    """Merge the delta into a history that holds one row per copy."""
    names = node.columns if names is None else names
    when = sql.SQL("{} > 0").format(var(node.id))
    if node.insert_only:
        return [Step(render("node/flush_insert_only", hist=node.hist, delta=node.delta,
                            columns=cols(names)), when, dynamic=False)]
    known = node.types if names == node.columns else ()
    slots = {"hist": node.hist, "delta": node.delta, "sign": SIGN_ID, "columns": cols(names),
             "h_columns": cols(names, "h"), "n_columns": cols(names, "n"),
             "identity": identity(names, known),
             "same_identity": sql.SQL("").join(
                 sql.SQL(" AND {} IS NOT DISTINCT FROM {}").format(h, n)
                 for h, n in zip(as_texts(names, known, "h"), as_texts(names, known, "n")))}
    return [Step(render("node/flush_signed", **slots), when)]


def _as_text(types: dict, *column: str) -> sql.Composable:
    """The column as text that tells its equal values apart: bpchar's cast to text
    drops the trailing spaces that do ('x' and 'x  '), its output keeps them."""
    spaced = _TYPMOD.sub("", types.get(column[-1], "")) in ("bpchar", "character")
    return sql.SQL("textin(bpcharout({}))" if spaced else "({})::text").format(
        sql.Identifier(*column))


def as_texts(names, types, alias: str | None = None) -> list[sql.Composable]:
    """The text of each column (of `alias`) whose equal values can differ (2.0 and
    2.000), to group or compare rows by beside the columns: rows equal but not the same
    stay apart."""
    typed = dict(zip(names, types))
    return [_as_text(typed, *([] if alias is None else [alias]), c)
            for c in _identity(names, types)]


def identity(names, types) -> sql.Composable:
    """`, text` of each column as_texts names: to group rows by beside the columns."""
    return sql.SQL("").join(sql.SQL(", {}").format(t) for t in as_texts(names, types))


def bounded(node: Node, rows: sql.Composable) -> tuple[sql.Composable, sql.Composable]:
    """A recursion's rows read up to the node's bound (layout['bound'], set where
    registration could not estimate the state: max_query_state over the row's width):
    (WITH items to append, each after a comma; the relation to read). The LIMIT stops
    the recursion one row past the bound, and the statement fails there, isolating the
    queries that read the node. Without a bound, `rows` as it is."""
    bound = node.layout.get("bound")
    if bound is None:
        return sql.SQL(""), rows
    return (render("node/bounded", rows=rows, limit=sql.Literal(bound + 1),
                   bound=sql.Literal(bound)), sql.SQL("argus_bounded"))


def signature(kind: str, parents, names, exprs, definition: dict) -> str:
    """A node's canonical definition: an equal signature means the same node. It hashes
    what the node computes, never how it keeps it (LAYOUT: the same rows, kept as a view
    or a table, indexed or not, are one node), nor who may find it (the catalog's
    nodes.private_to and nodes.findable: network.builder.Builder.ensure)."""
    assert not LAYOUT & definition.keys(), f"layout in a definition: {definition}"
    return json.dumps([kind, [p.id for p in parents], list(zip(names, exprs)), definition],
                      sort_keys=True)
