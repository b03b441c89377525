"""Window nodes: window functions (ROW_NUMBER, RANK, LAG, running sums, … OVER) over
their parent, kept by computing again exactly the partitions a cycle's changes touched;
and grouped, the aggregates argus keeps no bookkeeping for (string_agg, percentile_cont,
sum(DISTINCT) …), a row per group computed again the same way.
The partition keys all the node's windows share are its first columns (argus_p0, …);
with none, the parent is one partition, computed again whenever it changes. Top-K per
group (a selection `rn <= k` above, argus.frontend.topk) keeps only the rows ranked
within k."""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from psycopg import sql
from sqlglot import exp

from ..frontend.topk import RANKINGS
from ..templates import render
from ..trees import DIALECT
from .base import (Kind, Node, SIGN_ID, Step, T1, add_hash, any_rows, cols, create_delta,
                   named, register, row_hash, tid_column, var)


@dataclass(frozen=True)
class WindowSpec:
    keys: int  # the first `keys` columns are the partition keys
    keep: tuple[str, int] | None = None  # only the rows whose ranking column is ≤ k
    grouped: bool = False  # GROUP BY the keys: a row per partition (its aggregates)


def _touched(source: sql.Composable, columns: list[str], keys: list[sql.Composable],
             names: list[str], ctid: bool = False) -> sql.Composed:
    """The rows of `source` (alias t1) in the cycle's touched partitions: `keys` over
    t1 are the partition keys, `names` their columns in argus_keys; with `ctid`, each
    row's (argus_ctid)."""
    listed = cols(columns, "t1")
    if ctid:
        listed = sql.SQL("{}, {}.ctid AS argus_ctid").format(listed, T1)
    if not keys:
        return sql.SQL("SELECT {} FROM {} AS {}").format(listed, source, T1)
    equal = sql.SQL(" AND ").join(sql.SQL("{} = {}").format(k, sql.Identifier("k", n))
                                  for k, n in zip(keys, names))
    return render("window/touched", columns=listed, source=source, t1=T1, equal=equal,
                  keys=sql.SQL(", ").join(keys))


def _kept_as_parent_rows(node: Node, parent: Node) -> sql.Composable | None:
    """A Top-K node's own rows of the touched partitions (argus_old, already read) as
    its parent's (the columns its expressions read; the others NULL), each with its
    ctid and its rank (window/delta_topk), when its new top
    rows can be ranked among its old ones and the new rows instead of among the whole
    partition: the parent only gains rows, and the node's one window function is the
    ranking it keeps by (a row ranked past k only falls further; every row ranked
    before a kept row is kept). None otherwise."""
    if node.spec.keep is None or node.spec.grouped or not parent.insert_only:
        return None
    trees = [sqlglot.parse_one(e, read=DIALECT) for e in node.exprs]
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
    return sql.SQL("SELECT {}, {}.argus_ctid, {}.{} AS argus_rank FROM argus_old AS {}").format(
        sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier(passed[c]), sql.Identifier(c))
            if c in passed
            else sql.SQL("CAST(NULL AS {}) AS {}").format(sql.SQL(t), sql.Identifier(c))
            for c, t in zip(parent.columns, parent.types)),
        T1, T1, sql.Identifier(node.spec.keep[0]), T1)


class WindowCompiler:
    def _slots(self, node: Node, parent: Node, old_rows: sql.Composable | None = None
               ) -> dict:
        keys = node.columns[:node.spec.keys]
        group_by = sql.SQL(" GROUP BY {}").format(sql.SQL(", ").join(
            map(sql.Literal, range(1, len(keys) + 1)))) if node.spec.grouped and keys \
            else sql.SQL("")
        return {"hist": node.hist, "columns": node.column_list, "t1": T1, "sign": SIGN_ID,
                "group_by": group_by,
                "named": named(node.exprs, node.columns), "parent": parent.hist,
                "s_columns": cols(node.columns, "s"), "s_hash": row_hash(node.columns, "s"),
                "d_columns": cols(node.columns, "d"), "d_hash": row_hash(node.columns, "d"),
                "p_columns": parent.column_list,
                "key_exprs": named(node.exprs[:len(keys)], keys) if keys else sql.SQL("1"),
                "kept": sql.SQL("TRUE") if node.spec.keep is None else sql.SQL(
                    "{} <= {}").format(sql.Identifier("argus_w", node.spec.keep[0]),
                                       sql.Literal(node.spec.keep[1])),
                "parent_touched": old_rows or _touched(
                    parent.hist, parent.columns,
                    [sql.SQL("({})").format(sql.SQL(e))  # `k > 1 = …`
                     for e in node.exprs[:len(keys)]], keys),
                "retracted": sql.SQL("") if parent.insert_only else sql.SQL(
                    "\n        EXCEPT ALL\n        SELECT {} FROM {} AS {} WHERE {}.{} < 0"
                ).format(parent.column_list, parent.delta, T1, T1, SIGN_ID),
                "touched_here": _touched(node.hist, node.columns,
                                         [sql.Identifier("t1", k) for k in keys], keys,
                                         ctid=True)}

    def create(self, node, parents):
        keys = node.columns[:node.spec.keys]  # a cycle reads its touched partitions
        return [render("window/create", **self._slots(node, parents[0])),
                *add_hash(node, indexed=False),
                *([sql.SQL("CREATE INDEX ON {} ({})").format(node.hist, cols(keys))]
                  if keys else []),
                create_delta(node), tid_column(node)]

    def backfill(self, node, parents):
        return [render("window/backfill", **self._slots(node, parents[0]))]

    def evaluate(self, node, parents):
        old_rows = _kept_as_parent_rows(node, parents[0])
        if old_rows is None:
            statement = render("window/delta", delta=node.delta_table,
                               parent_delta=parents[0].delta, **self._slots(node, parents[0]))
        else:
            statement = render(
                "window/delta_topk", delta=node.delta_table, parent_delta=parents[0].delta,
                rank=sql.Identifier(node.spec.keep[0]),
                n_columns=cols(node.columns, "n"), n_hash=row_hash(node.columns, "n"),
                o_columns=cols(node.columns, "o"), o_hash=row_hash(node.columns, "o"),
                **self._slots(node, parents[0], old_rows))
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


KIND = register(Kind("window", lambda d: WindowSpec(
    d["keys"], tuple(d["keep"]) if d.get("keep") else None, bool(d.get("grouped"))),
    WindowCompiler(), _describe))
