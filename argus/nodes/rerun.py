"""Re-run nodes: a query evaluated by running its SQL again, in each cycle that brings
its streams rows, over their histories and the new rows, and keeping the difference
from the answer it holds as its changes (issue 25's fallback for a query whose
incremental path costs more than re-running it, argus.adapt). The node's parents are
the streams the query reads; it reads their whole histories, which purging then keeps.
"""

from __future__ import annotations

import re

from psycopg import sql
from sqlglot import exp

from ..errors import QueryError
from ..frontend.temporal import rewrite_user_calls
from ..templates import render
from ..trees import DIALECT, tree_of
from .base import (Kind, Node, SIGN_ID, Step, add_hash, bag_flush, bounded, cols, create_delta,
                   register_kind, row_hash)

Q = sql.Identifier("argus_q")
_SOURCE = "argus_src_"  # a stream's place in the stored query text, until compiled


def query_text(canonical: str, streams: list[str]) -> str:
    """The canonical query with each stream it reads (`streams`, the node's parents in
    order) as a placeholder a compiler fills with the rows to read: sqlglot's SQL with
    its braces escaped for psycopg's `sql.SQL.format`. The streams are marked by a name
    the query's text does not hold (a literal may say anything, '{s0}' included)."""
    tree = rewrite_user_calls(tree_of(canonical))
    marker, k = _SOURCE, 0
    while marker in canonical:
        k += 1
        marker = f"{_SOURCE}{k}_"
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    sources = 0
    for table in list(tree.find_all(exp.Table)):
        if table.name in ctes or table.name not in streams or isinstance(table.this, exp.Func):
            continue
        table.set("this", exp.to_identifier(f"{marker}{streams.index(table.name)}",
                                            quoted=True))
        table.set("db", None)
        sources += 1
    text = tree.sql(dialect=DIALECT).replace("{", "{{").replace("}", "}}")
    text, placed = re.subn(rf'"{marker}(\d+)"', r"{s\1}", text)
    if placed != sources:
        raise QueryError("the query cannot be evaluated by re-running it: its text names "
                         "its streams where argus cannot tell them apart")
    return text


def query(node: Node, sources: list[sql.Composable]) -> sql.Composed:
    return sql.SQL(node.definition["sql"]).format(
        **{f"s{i}": s for i, s in enumerate(sources)})


def _now(parent: Node) -> sql.Composed:
    if parent.insert_only:
        return render("rerun/source", columns=parent.column_list, hist=parent.hist,
                      delta=parent.delta)
    return render("rerun/source_table", columns=parent.column_list, hist=parent.hist,
                  delta=parent.delta, sign=SIGN_ID,
                  key=sql.SQL(", ").join(map(sql.Identifier, parent.definition["key"])))


class RerunCompiler:
    def _slots(self, node: Node) -> dict:
        return {"hist": node.hist, "columns": node.column_list, "q": Q,
                "q_columns": cols(node.columns, "argus_q"),
                "hash": row_hash(node.columns, "argus_q"),
                "d_columns": cols(node.columns, "d"), "d_hash": row_hash(node.columns, "d"),
                "sign": SIGN_ID}

    def create(self, node, parents):
        over = query(node, [p.hist for p in parents])
        return [render("rerun/create", query=over, **self._slots(node)),
                *add_hash(node), create_delta(node)]

    def backfill(self, node, parents):
        return [render("rerun/backfill", query=query(node, [p.hist for p in parents]),
                       **self._bounded(node), **self._slots(node))]

    def evaluate(self, node, parents):
        return [Step(render("rerun/delta", delta=node.delta_table,
                            query=query(node, [_now(p) for p in parents]),
                            **self._bounded(node), **self._slots(node)))]

    def _bounded(self, node: Node) -> dict:
        with_bound, read = bounded(node, sql.SQL("argus_rows"))
        return {"bounded": with_bound, "read": read}

    def flush(self, node, parents):
        return bag_flush(node)


KIND = register_kind(Kind("rerun", lambda d: None, RerunCompiler(),
                     lambda node: ["evaluated by re-running its query over its streams' "
                                   "histories in each cycle that brings them rows; its changes "
                                   "are the difference from the answer it holds"],
                     symbol="↻"))
