"""The indexes a new node asks for on the tables holding its parents' rows: a join's
keys, a window's partitions (and a Top-K's order), a recursion's probes, a purge's time
columns, so that each cycle's delta probes those tables instead of scanning them.

Each function makes what is missing and answers [schema, name] of the index; the
builder records them with the node (records.note_indexes: drop_unused keeps an index
while a node names it).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable

import psycopg
from psycopg import sql
from sqlglot import exp

from ..frontend.relations import short
from ..names import TIME_TYPES
from ..nodes import Node, virtual
from ..nodes.join import join_condition
from ..nodes.lazy import is_lazy
from ..nodes.window import read_order
from ..trees import DIALECT, conjuncts, tree_of
from . import records

Load = Callable[[int], Node]
Keys = list[tuple[Node, list[str]]]


def for_keys(conn: psycopg.Connection, load: Load, keys: Keys) -> list[list[str]]:
    """An index per (parent, columns) on the table holding the parent's rows, where
    that table holds the columns as they are."""
    made = []
    for parent, columns in keys:
        found = table_of(conn, load, parent, columns)
        if found is not None:
            table, columns = found
            name = having_index(conn, parent, table, columns) or index(conn, table, columns)
            made.append([table.hist_ref[0], name])
    return made


def top(conn: psycopg.Connection, load: Load, parent: Node, keys: list[str], terms
        ) -> list[str] | None:
    """An index on the table holding the parent's rows, by the partition keys and then
    the window's ORDER BY terms in their own directions and NULLS order (or the value
    that reads them in order: nodes.window.read_order), from which a Top-K node reads
    each partition's first rows (nodes.window.top_order); where a B-tree cannot hold
    them (`shape`), one for probes on the partition keys. None: the table does not hold
    them all as they are."""
    found = table_of(conn, load, parent, keys + [t.this.name for t in terms])
    if found is None or len(found[1]) != len(keys) + len(terms):
        return None
    table, columns = found
    ordered = [t.copy() for t in terms]
    for term, column in zip(ordered, columns[len(keys):]):
        term.set("this", exp.column(column, quoted=True))
    ordered = read_order(ordered, dict(zip(table.columns, table.types)))
    indexed = columns[:len(keys)] + [t.this.name for t in ordered
                                     if isinstance(t.this, exp.Column)]  # (as they are)
    if indexed and shape(conn, table, indexed) != ("btree", indexed):
        return [table.hist_ref[0], index(conn, table, columns[:len(keys)])] if keys else None
    spec = sql.SQL(", ").join([*map(sql.Identifier, columns[:len(keys)]),
                               *(sql.SQL(t.sql(DIALECT)) for t in ordered)])
    text = spec.as_string(conn)
    name = short(f"argus_{table.hist_ref[1]}_{'_'.join(columns[:len(keys) + len(ordered)])}_"
                 f"{hashlib.md5(text.encode()).hexdigest()[:6]}_top_idx")
    conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ({})").format(
        sql.Identifier(name), table.hist, spec))
    return [table.hist_ref[0], name]


def table_of(conn: psycopg.Connection, load: Load, node: Node, columns: list[str],
             through: Callable[[Node], bool] = virtual) -> tuple[Node, list[str]] | None:
    """The node whose table holds the rows of `node` (itself, unless its history is
    a view) and its columns that `columns` are — through a virtual join, the
    longest leading part of them that one side passes through; None if the first
    is computed."""
    while through(node):
        exprs = dict(zip(node.columns, node.exprs))
        found = None
        for alias, parent_id in zip(("t1", "t2"), node.parents):
            parent = load(parent_id)
            passed = {sql.Identifier(alias, c).as_string(conn): c for c in parent.columns}
            mine = [passed[e] for e in itertools.takewhile(
                passed.__contains__, (exprs[c] for c in columns))]
            if mine and (found is None or len(mine) > len(found[1])):
                found = parent, mine
        if found is None:
            return None
        node, columns = found
    return node, columns


def having_index(conn: psycopg.Connection, parent: Node, table: Node, columns: list[str]
                 ) -> str | None:
    """A selection over an aggregate's groups (a HAVING) is a view of them: a join
    reading it would scan every group for the few that pass (TPC-H Q18: 150,000
    groups for 5). Its join key is indexed on the groups that pass it only, a partial
    index, which both probes and lists them. (The groups' sums that the predicate reads
    are then indexed: their updates are no longer HOT.) None: not such a selection, or a
    predicate PostgreSQL cannot index."""
    predicate = parent.definition.get("predicate")
    if not (parent.kind_of.selects and virtual(parent) and predicate
            and not parent.definition.get("temporal") and table.kind_of.groups
            and parent.parents == (table.id,)) or shape(conn, table, columns) != ("btree",
                                                                                   columns):
        return None
    tree = tree_of(predicate)
    for column in tree.find_all(exp.Column):
        column.set("table", None)
    name = short(f"argus_{table.hist_ref[1]}_{'_'.join(columns)}_n{parent.id}_idx")
    try:
        with conn.transaction():
            conn.execute(sql.SQL("CREATE INDEX {} ON {} ({}) WHERE {}").format(
                sql.Identifier(name), table.hist,
                sql.SQL(", ").join(map(sql.Identifier, columns)), sql.SQL(tree.sql(DIALECT))))
    except psycopg.Error:  # (a function that is not IMMUTABLE, a column it computes)
        return None
    return name


def shape(conn: psycopg.Connection, table: Node, columns: list[str]) -> tuple[str, list[str]]:
    """(method, columns) of an index for equality probes on `columns`, led by the first
    (argus.probe_index_shape: a B-tree where every value fits its entries, else a hash
    index on the first column)."""
    method, columns = conn.execute("SELECT * FROM argus.probe_index_shape(%s::regclass, %s)",
                                   (table.hist.as_string(conn), columns)).fetchone()
    return method, list(columns)


def index(conn: psycopg.Connection, parent: Node, columns: list[str]) -> str:
    """The name of an index on the parent led by `columns` (as `shape` says): one that
    exists (argus's, a tracked table's primary key: a second index on its leading
    column cost every change of TPC-H's lineitem and orders, or the parent's own: a
    window's on its partitions, which q11's second window asked for again), else a new
    one, which replaces those requested of argus's it extends (whose columns lead it),
    so that a stream history keeps one index per join key, not one per query."""
    schema, table = parent.hist_ref
    method, columns = shape(conn, parent, columns)
    existing = conn.execute(
        r"""SELECT c.relname, array_agg(a.attname ORDER BY k.ord),
                   c.relname NOT LIKE 'argus\_%%' OR i.indisprimary
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             JOIN pg_am m ON m.oid = c.relam AND m.amname = %s
             CROSS JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            WHERE i.indrelid = %s::regclass
              AND NOT 0 = ANY (i.indkey)  -- not an aggregate's expression index
              AND i.indpred IS NULL  -- nor a HAVING's partial one (having_index)
            GROUP BY c.relname, i.indisprimary ORDER BY c.relname""",
        (method, parent.hist.as_string(conn))).fetchall()
    for name, indexed, _ in existing:
        if indexed[:len(columns)] == columns:
            return name
    name = short(f"argus_{table}_{'_'.join(columns)}_{'hash_' * (method == 'hash')}idx")
    conn.execute("SELECT argus.probe_index(%s::regclass, %s, %s)",
                 (parent.hist.as_string(conn), columns, name))
    for old, indexed, kept in existing:
        if columns[:len(indexed)] == indexed and not kept:
            records.rename_index(conn, [schema, old], [schema, name])
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(schema, old)))
    return name


def join_keys(condition: str, left: Node, right: Node) -> Keys:
    """(parent, columns) of the indexes worth having for a join condition: per side,
    the columns a top-level conjunct compares with an expression of the other side only:
    the equality keys and a window key (a BETWEEN's, else a time's), so that a delta
    row's probe reads only its partners, (sender, tran_date) for a chain within a day
    window; with no equality key, one range key. An index costs at every insert into
    the parent, hence one per side."""
    tree = tree_of(condition)
    side = {"t1": left, "t2": right}
    keys: dict[str, tuple[list[str], list[str], list[str]]] = {t: ([], [], []) for t in side}

    def consider(kind: int, column: exp.Expr, other: list[exp.Expr]) -> None:
        if not isinstance(column, exp.Column) or column.table not in side:
            return
        tables = {c.table for o in other for c in o.find_all(exp.Column)}
        if tables and tables <= {"t1", "t2"} - {column.table}:
            found = keys[column.table][kind]
            if column.name not in found:
                found.append(column.name)

    for node in conjuncts(tree):
        if isinstance(node, exp.Between):
            consider(1, node.this, [node.args["low"], node.args["high"]])
        elif isinstance(node, (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
            kind = 0 if isinstance(node, exp.EQ) else 2
            consider(kind, node.left, [node.right])
            consider(kind, node.right, [node.left])
    out = []
    for table, (equal, between, bounded) in keys.items():
        types = dict(zip(side[table].columns, side[table].types))
        windows = [c for c in between + bounded if c not in equal
                   and (c in between or types.get(c) in TIME_TYPES)]
        columns = equal + windows[:1] if equal else (windows or bounded)[:1]
        if columns:
            out.append((side[table], columns))
    return out


class IndexRequests:
    """The indexes the builder's new nodes ask of their parents, recorded with the node
    (network.builder.Builder mixes it in)."""

    def _index_parent(self, node: Node, parent: Node, columns: list[str]) -> None:
        """Index the parent on the time columns the node's bounds compare, so that
        purging the parent finds its old rows without a scan."""
        self._record_indexes(node, [(parent, [c]) for c in columns if c in parent.columns])


    def _index_join_keys(self, node: Node, left: Node, right: Node) -> None:
        """Index the parents' histories on the columns the join condition compares with
        the other side, so that a delta probes them instead of scanning."""
        self._record_indexes(node, join_keys(join_condition(node, [left, right]),
                                            left, right))

    def _record_indexes(self, node: Node, keys: Keys) -> None:
        if node not in self.created or node.layout.get("indexes") is not None:
            return
        self.forget()
        records.note_indexes(self.conn, node.id, for_keys(self.conn, self.load, keys))

    def _top_index(self, node: Node, parent: Node, keys: list[str], terms) -> None:
        if node not in self.created:
            return
        made = top(self.conn, self.load, parent, keys, terms)
        if made is not None:
            self.forget()
            records.note_indexes(self.conn, node.id, [made])

    def origin(self, node: Node, columns: list[str]) -> tuple[Node, list[str]] | None:
        """The table a lazy join's `full` view reads `columns` from (the longest leading
        part of them one table holds), through its parents' views."""
        return table_of(self.conn, self.load, node, columns,
                        through=lambda n: virtual(n) or is_lazy(n))

    def index_of(self, parent: Node, columns: list[str]) -> str:
        return index(self.conn, parent, columns)
