"""Window nodes: window functions (ROW_NUMBER, RANK, LAG, running sums, … OVER) over
their parent, kept by computing again exactly the partitions a cycle's changes touched;
and grouped, the aggregates argus keeps no bookkeeping for (string_agg, percentile_cont,
sum(DISTINCT) …), a row per group computed again the same way.
The partition keys all the node's windows share are its first columns (argus_p0, …);
with none, the parent is one partition, computed again whenever it changes. Top-K per
group (a selection `rn <= k` above, argus.frontend.topk) keeps only the rows ranked
within k. When every function reads only the rows ordered before its own (LAG, running
aggregates, ROW_NUMBER), only a touched partition's rows from its first change on are
computed again (Suffix): a stream appended in order costs its new rows only."""

from __future__ import annotations

import re
from dataclasses import dataclass

from psycopg import sql
from sqlglot import exp

from ..frontend.topk import RANKINGS
from ..templates import render
from ..trees import DIALECT, tree_of
from .base import (Kind, Node, SIGN_ID, Step, T1, add_hash, any_rows, as_texts, cols,
                   create_delta, identity, named, passed_on, probe_index, register_kind,
                   row_hash, tid_column, var, virtual)
from .aggregate import PROBE_RATIO  # (touched partitions probed one by one: the same trade)


@dataclass(frozen=True)
class WindowSpec:
    keys: int  # the first `keys` columns are the partition keys
    keep: tuple[str, int] | None = None  # only the rows whose ranking column is ≤ k
    grouped: bool = False  # GROUP BY the keys: a row per partition (its aggregates)


# Window functions whose value at a row depends only on the rows ordered before it:
# LAG reads a fixed number of them back; a running aggregate (the frame from the
# partition's start to the row) and ROW_NUMBER continue from the value of the last
# row before (their carry), combined as below with their value over the rows after.
_CARRIED = {exp.Sum: "CASE WHEN {c} IS NULL THEN {w} WHEN {w} IS NULL THEN {c} "
                     "ELSE {c} + {w} END",
            exp.Count: "coalesce({c}, 0) + {w}", exp.RowNumber: "coalesce({c}, 0) + {w}",
            exp.Min: "least({c}, {w})", exp.Max: "greatest({c}, {w})"}
_FLOATS = {"real", "double precision"}  # (sums carried would round otherwise)


@dataclass(frozen=True)
class Suffix:
    """How a window node computes again only the rows of a touched partition ordered at
    or after its first changed row (its frontier, the least ORDER BY value among the
    parent's changes there): the rows before it keep their values when every window
    function reads only rows ordered before its own (window/delta_suffix)."""
    order: str  # the ORDER BY expression over the parent (t1), ascending
    column: str  # the node's column that passes it through
    lookback: int  # the rows before the frontier LAG reads
    carries: tuple[tuple[str, str], ...]  # (node column, how its carry combines)
    exprs: tuple[str, ...]  # the node's expressions over the suffix and the lookback rows


def suffix(node: Node) -> Suffix | None:
    """The node's Suffix, or None: it keeps the top k, groups, has no partitions, or a
    function reads rows after its own (LEAD, a whole-partition frame, RANK …), or an
    ORDER BY other than one ascending column it passes through."""
    spec, keys = node.spec, node.exprs[:node.spec.keys]
    if spec.keep is not None or spec.grouped or not keys:
        return None
    order, lookback, carries, exprs = None, 0, [], []
    types = node.types or (None,) * len(node.columns)  # (none before its table exists)
    for column, text, pg_type in zip(node.columns, node.exprs, types):
        tree = tree_of(text)
        for window in tree.find_all(exp.Window):
            ordered = window.args.get("order")
            terms = ordered.expressions if ordered else []
            if ([p.sql(DIALECT) for p in window.args.get("partition_by") or []] != list(keys)
                    or len(terms) != 1 or terms[0].args.get("desc")
                    or terms[0].args.get("nulls_first")
                    or not isinstance(terms[0].this, exp.Column)):
                return None
            key = terms[0].this.sql(DIALECT)
            if order not in (None, key):
                return None
            order = key
            function = window.this
            if isinstance(function, exp.Lag):
                offset = function.args.get("offset")
                if offset is not None and not (isinstance(offset, exp.Literal)
                                               and offset.name.isdigit()):
                    return None
                lookback = max(lookback, int(offset.name) if offset is not None else 1)
            elif window is tree and type(function) in _CARRIED and _from_start(window) \
                    and not (isinstance(function, exp.Sum) and pg_type in _FLOATS):
                carries.append((column, _CARRIED[type(function)]))
                tree = _over_suffix(window)
            else:
                return None
        exprs.append(tree.sql(DIALECT))
    passed = [c for c, e in zip(node.columns, node.exprs) if e == order]
    if order is None or not passed:
        return None
    return Suffix(order, passed[0], lookback, tuple(carries), tuple(exprs))


def _from_start(window: exp.Window) -> bool:
    """Its frame runs from the partition's start to the row (or its peers)."""
    frame = window.args.get("spec")
    return frame is None or (
        str(frame.args.get("start", "")).upper() == "UNBOUNDED"
        and str(frame.args.get("start_side", "")).upper() == "PRECEDING"
        and str(frame.args.get("end") or "CURRENT ROW").upper() == "CURRENT ROW"
        and not frame.args.get("exclude"))


def _over_suffix(window: exp.Window) -> exp.Window:
    """A carried function over the rows from the frontier on only (the lookback rows
    are LAG's): ROW_NUMBER as their running count."""
    function = window.this.copy()
    window = window.copy()
    if isinstance(function, exp.RowNumber):
        function = exp.Count(this=exp.Star())
        window.set("spec", exp.WindowSpec(kind="ROWS", start="UNBOUNDED",
                                          start_side="PRECEDING", end="CURRENT ROW"))
    window.set("this", exp.Filter(this=function, expression=exp.Where(
        this=exp.not_(exp.column("argus_ctx", table="t1", quoted=True)))))
    return window


def _touched(source: sql.Composable, columns: list[str], keys: list[sql.Composable],
             names: list[str], ctid: bool = False, order: sql.Composable | None = None,
             hashed: bool = False, node: Node | None = None) -> sql.Composed:
    """The rows of `source` (alias t1) in the cycle's touched partitions: `keys` over
    t1 are the partition keys, `names` their columns in argus_keys; with `ctid`, each
    row's (argus_ctid); with `hashed`, its argus_hash; with `order` (its ORDER BY over
    t1), only the rows from each partition's frontier on (argus_keys.argus_e; NULL: all
    of them); with `node`, `source` is that window node's history, indexed by the keys
    first (WindowCompiler.create), which few partitions probe."""
    listed = cols(columns, "t1")
    if ctid:
        listed = sql.SQL("{}, {}.ctid AS argus_ctid").format(listed, T1)
    if hashed:
        listed = sql.SQL("{}, {}.argus_hash").format(listed, T1)
    if not keys:
        return sql.SQL("SELECT {} FROM {} AS {}").format(listed, source, T1)
    equal = _equal(keys, names)
    branches = [equal] if order is None else [  # (disjoint, each one range of an index
        sql.SQL("{} AND {}").format(equal, b) for b in (  # on the keys and `order`)
            sql.SQL("k.argus_e IS NULL"), sql.SQL("{} >= k.argus_e").format(order),
            sql.SQL("{} IS NULL AND k.argus_e IS NOT NULL").format(order))]
    found = sql.SQL("\nUNION ALL\n").join(
        sql.SQL("SELECT {} FROM argus_keys AS k JOIN {} AS {} ON {}").format(
            listed, source, T1, b) if node is None else
        render("window/touched_probed", columns=listed, source=source, t1=T1, equal=b,
               ratio=sql.Literal(PROBE_RATIO), rows=sql.SQL(
                   "(SELECT s.hist_rows FROM argus_catalog.node_stats AS s "
                   "WHERE s.node_id = {})").format(sql.Literal(node.id)))
        for b in branches)
    return render("window/touched", columns=listed, source=source, t1=T1, found=found,
                  keys=sql.SQL(", ").join(keys),
                  k_keys=sql.SQL(", ").join(sql.Identifier("k", n) for n in names))


def less_retracted(parent: Node, rows: sql.Composable, flag: str = "") -> sql.Composable:
    """The parent's rows as they are now: `rows` (a parenthesized query of its columns,
    then `flag`'s), less one copy of each row its delta retracts. Where equal values
    can differ (2.0 and 2.000), compared with their text too: EXCEPT ALL alone may take
    away the new 2.000 for the retracted 2.0 (found by a helper)."""
    if parent.insert_only:
        return rows
    texts = as_texts(parent.columns, parent.types, "argus_s")
    told = sql.SQL("").join(sql.SQL(", {} AS {}").format(t, sql.Identifier(f"argus_i{i}"))
                            for i, t in enumerate(texts))
    if texts:  # (else EXCEPT ALL by equality is exact)
        rows = sql.SQL("(SELECT argus_s.*{} FROM {} AS argus_s)").format(told, rows)
    return sql.SQL("{}\n    EXCEPT ALL\n    SELECT {}{}{} FROM {} AS argus_s WHERE argus_s.{} < 0"
                   ).format(rows, cols(parent.columns, "argus_s"), sql.SQL(flag), told,
                            parent.delta, SIGN_ID)


def _equal(keys: list[sql.Composable], names: list[str], k: str = "k") -> sql.Composed:
    return sql.SQL(" AND ").join(sql.SQL("{} = {}").format(e, sql.Identifier(k, n))
                                 for e, n in zip(keys, names))


def _kept_as_parent_rows(node: Node, parent: Node) -> sql.Composable | None:
    """A Top-K node's own rows of the touched partitions (argus_old, already read) as
    its parent's (the columns its expressions read; the others NULL), each with its
    ctid, its rank and its hash (window/delta_topk), when its new top
    rows can be ranked among its old ones and the new rows instead of among the whole
    partition: the parent only gains rows, and the node's one window function is the
    ranking it keeps by (a row ranked past k only falls further; every row ranked
    before a kept row is kept). None otherwise."""
    if node.spec.keep is None or node.spec.grouped or not parent.insert_only:
        return None
    trees = [tree_of(e) for e in node.exprs]
    windows = [t for t in trees if t.find(exp.Window)]
    if len(windows) != 1 or not isinstance(windows[0], exp.Window) \
            or not isinstance(windows[0].this, RANKINGS):
        return None
    passed: dict[str, str] = {}
    for column, tree in zip(node.columns, trees):
        if isinstance(tree, exp.Column) and tree.table == "t1":
            passed.setdefault(tree.name, column)
    if not {c.name for t in trees for c in t.find_all(exp.Column)} <= set(passed):
        return None
    return sql.SQL("SELECT {}, {}.argus_ctid, {}.{} AS argus_rank, {}.argus_hash AS argus_ohash "
                   "FROM argus_old AS {}").format(
        sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier(passed[c]), sql.Identifier(c))
            if c in passed
            else sql.SQL("CAST(NULL AS {}) AS {}").format(sql.SQL(t), sql.Identifier(c))
            for c, t in zip(parent.columns, parent.types)),
        T1, T1, sql.Identifier(node.spec.keep[0]), T1, T1)


def top_order(node: Node, parent: Node) -> list[exp.Ordered] | None:
    """The ORDER BY of a Top-K node over a parent that retracts rows, when each touched
    partition's new top rows are among the parent's first k there, plus as many as the
    cycle retracts, plus their ties (window/top_prefix): its one window function is the
    ROW_NUMBER or RANK it keeps by (a DENSE_RANK ≤ k may keep more than k + r rows),
    over the node's partitions, partitioned and ordered by columns of the parent that a
    table holds as they are (Builder._top_index makes the index on the partition keys
    and those columns that reads the first rows in order: without it, each touched
    partition would be read whole, once per partition). None otherwise."""
    if node.spec.keep is None or node.spec.grouped or parent.insert_only:
        return None
    trees = [tree_of(e) for e in node.exprs]
    windows = [w for t in trees for w in t.find_all(exp.Window)]
    if len(windows) != 1 or not isinstance(windows[0].this, exp.RowNumber | exp.Rank) \
            or trees[node.columns.index(node.spec.keep[0])] is not windows[0]:
        return None
    keys = [tree_of(e) for e in node.exprs[:node.spec.keys]]
    order = windows[0].args.get("order")
    terms = order.expressions if order else []
    if list(windows[0].args.get("partition_by") or []) != keys or not terms:
        return None
    read = [*keys, *(t.this for t in terms)]
    if not all(isinstance(c, exp.Column) and c.table == "t1" and c.name in parent.columns
               and (not virtual(parent) or passed_on(parent, c.name)) for c in read):
        return None  # (a view's column must be its parent's: a selection over groups)
    return terms


# Types with values too long for a B-tree entry (argus.probe_index_shape says so of a
# table's columns; here, by the names format_type gives them, for code made without a
# server: where the two disagree, network.indexes.top makes no ordered index, and the
# order read stays exact, only slower)
_LONG = {"text", "bytea", "json", "jsonb", "xml", "character varying", "bit varying"}
_BOUNDED = re.compile(r"(character varying|character|bit varying|bit)\((\d+)\)")


def _fits_btree(pg_type: str | None) -> bool:
    bounded = _BOUNDED.fullmatch(pg_type or "")
    if bounded:
        return int(bounded[2]) <= (16000 if bounded[1].startswith("bit") else 500)
    return pg_type is not None and pg_type not in _LONG and not pg_type.endswith("[]")


def read_order(terms: list[exp.Ordered], types: dict[str, str]) -> list[exp.Ordered]:
    """The order a Top-K node reads each touched partition's first rows of its parent in
    (window/top_prefix; `types`: the types of the columns `terms` order by), and the one
    the index that serves it is made in (network.indexes.top): its ORDER BY up to a
    column a B-tree entry may not hold, which ties are fetched WITH (every row not
    fetched orders after those fetched by the exact terms too). A numeric of no declared
    precision (a SUM's) is read by its value as a float8, clamped to ±Infinity past that
    type's range (monotone: ties on it are fetched too), and ends the order. (A TPC-H
    Q10 without it sorted its aggregate's every group at every cycle.) Nothing to read
    by: the ORDER BY as it is (each touched partition read whole)."""
    read = []
    for term in terms:
        pg_type = types.get(term.this.name)
        if pg_type == "numeric":
            read.append(_as_float(term))
            break
        if not _fits_btree(pg_type):
            break
        read.append(term)
    return read or terms


def _as_float(term: exp.Ordered) -> exp.Ordered:
    value = term.this
    clamped = exp.Case(ifs=[exp.If(this=exp.LTE(this=exp.Abs(this=value.copy()),
                                                expression=exp.Literal.number("1e308")),
                                   true=value.copy())],
                       default=exp.Mul(this=exp.Anonymous(this="sign", expressions=[value.copy()]),
                                       expression=exp.cast(exp.Literal.string("Infinity"),
                                                           "numeric")))
    read = term.copy()
    read.set("this", exp.Paren(this=exp.cast(clamped, "double precision")))
    return read


def _top_prefix(node: Node, parent: Node, terms: list[exp.Ordered]) -> sql.Composed:
    keys = [sql.SQL("({})").format(sql.SQL(e)) for e in node.exprs[:node.spec.keys]]
    names = list(node.columns[:node.spec.keys])
    order = read_order(terms, dict(zip(parent.columns, parent.types)))
    slots = {"columns": cols(parent.columns, "t1"), "p_columns": parent.column_list,
             "parent": parent.hist, "t1": T1, "k": sql.Literal(node.spec.keep[1]),
             "order": sql.SQL(", ").join(sql.SQL(t.sql(DIALECT)) for t in order)}
    if not keys:
        return render("window/top_prefix", equal=sql.SQL("TRUE"), **slots)
    k_keys = sql.SQL(", ").join(sql.Identifier("k", n) for n in names)
    return render("window/top_prefix_keyed", equal=_equal(keys, names), k_keys=k_keys,
                  keys=sql.SQL(", ").join(keys), **slots)


def keeps_state(node: Node) -> bool:
    """Whether the node's rows are state a purge must keep: a Top-K's, which new rows
    are ranked among; a running window's, whose values (a running count, sum, row
    number …) new rows carry on from (window/delta_suffix)."""
    if node.spec.keep is not None:
        return True
    plan = suffix(node)
    return plan is not None and bool(plan.carries)


def reads_parent_partitions(node: Node, parent: Node) -> bool:
    """Whether a cycle reads the parent's rows of the partitions it touched (which an
    index on the partition keys serves): not a Top-K node that ranks new rows among its
    own kept ones, nor one that reads each partition's first rows (top_order)."""
    return suffix(node) is not None or (_kept_as_parent_rows(node, parent) is None
                                        and top_order(node, parent) is None)


class WindowCompiler:
    def _slots(self, node: Node, parent: Node, old_rows: sql.Composable | None = None,
               hashed: bool = False) -> dict:
        keys = node.columns[:node.spec.keys]
        group_by = sql.SQL(" GROUP BY {}").format(sql.SQL(", ").join(
            map(sql.Literal, range(1, len(keys) + 1)))) if node.spec.grouped and keys \
            else sql.SQL("")
        touched = old_rows or _touched(parent.hist, parent.columns, [
            sql.SQL("({})").format(sql.SQL(e)) for e in node.exprs[:len(keys)]], keys)  # (`k > 1`)
        rows = sql.SQL("({}\n         UNION ALL\n         SELECT {} FROM {} AS {} WHERE {}.{} > 0)"
                       ).format(touched, parent.column_list, parent.delta, T1, T1, SIGN_ID)
        return {"hist": node.hist, "columns": node.column_list, "t1": T1, "sign": SIGN_ID,
                "group_by": group_by, "identity": identity(node.columns, node.types),
                "named": named(node.exprs, node.columns), "parent": parent.hist,
                "s_columns": cols(node.columns, "s"), "s_hash": row_hash(node.columns, "s"),
                "d_columns": cols(node.columns, "d"), "d_hash": row_hash(node.columns, "d"),
                "p_columns": parent.column_list,
                "key_exprs": named(node.exprs[:len(keys)], keys) if keys else sql.SQL("1"),
                "kept": sql.SQL("TRUE") if node.spec.keep is None else sql.SQL(
                    "{} <= {}").format(sql.Identifier("argus_w", node.spec.keep[0]),
                                       sql.Literal(node.spec.keep[1])),
                "parent_touched": touched, "rows": less_retracted(parent, rows),
                "touched_keys": sql.SQL("SELECT DISTINCT {} FROM {} AS {}").format(
                    named(node.exprs[:len(keys)], keys) if keys else sql.SQL("1"),
                    parent.delta, T1),
                "touched_here": _touched(node.hist, node.columns,
                                         [sql.Identifier("t1", k) for k in keys], keys,
                                         ctid=True, hashed=hashed, node=node)}

    def create(self, node, parents):
        keys = list(node.columns[:node.spec.keys])  # a cycle reads its touched partitions
        plan = suffix(node)  # (from their frontiers on, by the ORDER BY column's order)
        by = [plan.column] if plan is not None else []
        return [render("window/create", **self._slots(node, parents[0])),
                *add_hash(node, indexed=False),
                *([probe_index(node, keys + by)] if keys else []),
                create_delta(node), tid_column(node)]

    def backfill(self, node, parents):
        return [render("window/backfill", **self._slots(node, parents[0]))]

    def _suffix_statement(self, node: Node, parent: Node, plan: Suffix) -> sql.Composed:
        keys = list(node.columns[:node.spec.keys])
        key_exprs = [sql.SQL("({})").format(sql.SQL(e)) for e in node.exprs[:len(keys)]]
        order, o = sql.SQL("({})").format(sql.SQL(plan.order)), sql.Identifier(plan.column)
        carried = {c: i for i, (c, _) in enumerate(plan.carries)}
        before = sql.SQL("") if not plan.lookback else sql.SQL(
            "\n     UNION ALL\n     SELECT b.*, true FROM argus_keys AS k CROSS JOIN LATERAL ("
            "SELECT {} FROM {} AS {} WHERE {} AND {o} < k.argus_e ORDER BY {o} DESC LIMIT {})"
            " AS b").format(cols(parent.columns, "t1"), parent.hist, T1,
                            _equal(key_exprs, keys), sql.Literal(plan.lookback), o=order)
        return render(
            "window/delta_suffix", delta=node.delta_table, columns=node.column_list,
            identity=identity(node.columns, node.types),
            sign=SIGN_ID, t1=T1, parent_delta=parent.delta, hist=node.hist, o=o, order=order,
            edge=sql.Literal(max(plan.lookback, 1) + 1),
            key_exprs=named(node.exprs[:len(keys)], keys), keys=sql.SQL(", ").join(key_exprs),
            key_positions=sql.SQL(", ").join(map(sql.Literal, range(1, len(keys) + 1))),
            c_keys=cols(keys, "c"),
            h_equal=_equal([sql.Identifier("h", k) for k in keys], keys, "c"),
            carries=sql.SQL("").join(
                sql.SQL(", CASE WHEN NOT (c.argus_whole OR b.argus_tied) THEN b.{c} END AS {c}")
                .format(c=sql.Identifier(f"argus_c{i}")) for i in carried.values()),
            carried=sql.SQL("").join(
                sql.SQL(", (array_agg(h.{} ORDER BY h.{} DESC))[1] AS {}").format(
                    sql.Identifier(c), o, sql.Identifier(f"argus_c{i}"))
                for c, i in carried.items()),
            touched_here=_touched(node.hist, node.columns, [sql.Identifier("t1", k) for k in keys],
                                  keys, ctid=True, order=sql.Identifier("t1", plan.column),
                                  node=node),
            rows=less_retracted(parent, sql.SQL(
                "(SELECT {p}, false AS argus_ctx FROM ({}) AS {}{}\n     UNION ALL\n"
                "     SELECT {p}, false FROM {} AS {} WHERE {}.{} > 0)").format(
                    _touched(parent.hist, parent.columns, key_exprs, keys, order=order), T1,
                    before, parent.delta, T1, T1, SIGN_ID, p=parent.column_list), ", false"),
            named=named(plan.exprs, node.columns),
            final=sql.SQL(", ").join(
                sql.SQL("{} AS {}").format(
                    sql.SQL(dict(plan.carries)[c]).format(
                        c=sql.Identifier("k", f"argus_c{carried[c]}"), w=sql.Identifier("w", c))
                    if c in carried else sql.Identifier("w", c), sql.Identifier(c))
                for c in node.columns),
            with_carries=sql.SQL("\n      LEFT JOIN argus_keys AS k ON {}").format(
                _equal([sql.Identifier("w", k) for k in keys], keys)) if carried else sql.SQL(""),
            o_keys=cols(keys, "o"), w_keys=cols(keys, "w"),
            n_columns=cols(node.columns, "n"), n_hash=row_hash(node.columns, "n"),
            d_columns=cols(node.columns, "d"), d_hash=row_hash(node.columns, "d"))

    def evaluate(self, node, parents):
        plan = suffix(node)
        if plan is not None:
            return [Step(self._suffix_statement(node, parents[0], plan), any_rows(parents[0]))]
        old_rows, terms = _kept_as_parent_rows(node, parents[0]), top_order(node, parents[0])
        if old_rows is None and terms is not None:
            keys = node.columns[:node.spec.keys]
            slots = self._slots(node, parents[0], _top_prefix(node, parents[0], terms))
            slots["touched_keys"] = render(
                "window/top_keys", key_exprs=slots["key_exprs"], delta=parents[0].delta,
                t1=T1, sign=SIGN_ID,
                positions=sql.SQL(", ").join(map(sql.Literal, range(1, len(keys) + 1)))
                if keys else sql.Literal(1))
            statement = render("window/delta", delta=node.delta_table,
                               parent_delta=parents[0].delta, **slots)
        elif old_rows is None:
            statement = render("window/delta", delta=node.delta_table,
                               parent_delta=parents[0].delta, **self._slots(node, parents[0]))
        else:
            rank, k = node.spec.keep
            statement = render(
                "window/delta_topk", delta=node.delta_table, parent_delta=parents[0].delta,
                rank=sql.Identifier(rank), n_columns=cols(node.columns, "n"),
                n_hash=row_hash(node.columns, "n"),
                n_kept=sql.SQL("n.{} <= {}").format(sql.Identifier(rank), sql.Literal(k)),
                o_columns=sql.SQL(", ").join(  # (the old row: its rank as it was)
                    sql.SQL("n.argus_rank") if c == rank else sql.Identifier("n", c)
                    for c in node.columns), **self._slots(node, parents[0], old_rows, hashed=True))
        return [Step(statement, any_rows(parents[0]))]

    def flush(self, node, parents):
        """Retracted rows deleted by the ctids the delta carries, inserted ones appended
        (a window node is never sharded: no Citus node reads ctids)."""
        slots = {"hist": node.hist, "delta": node.delta, "sign": SIGN_ID,
                 "columns": node.column_list}
        when = sql.SQL("{} > 0").format(var(node.id))
        return [Step(render("window/flush_delete", **slots), when),
                Step(render("window/flush_insert", **slots), when)]


def _describe(node: Node) -> list[str]:
    if node.spec.grouped:
        return [f"aggregates over {node.spec.keys} group key(s): the groups a cycle's "
                "changes touch are computed again from the parent"]
    return [f"window functions over {node.spec.keys} partition key(s): the partitions a "
            "cycle's changes touch are computed again from the parent"]


KIND = register_kind(Kind("window", lambda d: WindowSpec(
    d["keys"], tuple(d["keep"]) if d.get("keep") else None, bool(d.get("grouped"))),
    WindowCompiler(), _describe, keeps_state=keeps_state, top_k=lambda node: node.spec.keep,
    row_hashed=lambda node: True,
    label=lambda node: (f"ω top {node.spec.keep[1]}" if node.spec.keep
                        else f"ω over {node.spec.keys} key(s)")))
