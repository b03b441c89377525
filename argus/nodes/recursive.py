"""Recursive nodes: a WITH RECURSIVE relation (argus.frontend.recursive). Its parents
are the node of its non-recursive branches (insert-only) and the streams its recursive
branch reads; a cycle derives, by semi-naive rounds, exactly the rows the new rows add
(sql_templates/recursive/delta.sql). Insert-only: nothing it holds is ever retracted.
"""

from __future__ import annotations

from psycopg import sql

from ..templates import render
from .base import (Kind, Node, SIGN_ID, Step, T1, any_rows, bag_flush, bounded, cols, create_delta,
                   probe_index, register_kind, row_hash)

R_ALIAS = sql.Identifier("argus_d")


def _now(parent: Node) -> sql.Composed:
    return render("rerun/source", columns=parent.column_list, hist=parent.hist,
                  delta=parent.delta)


def _new(parent: Node) -> sql.Composed:
    return sql.SQL("(SELECT {} FROM {} AS argus_claimed)").format(parent.column_list,
                                                                  parent.delta)


def _held(node: Node) -> sql.Composed:
    """The rows held, under the relation's column names (as the step reads them)."""
    return sql.SQL("(SELECT {} FROM {})").format(node.column_list, node.hist)


class RecursiveCompiler:
    @staticmethod
    def _unheld(node: Node, row: sql.Composable) -> sql.Composed:
        """`row` (of the node's columns' types) is not held yet: one probe of the hash
        index (OFFSET 0 keeps it a probe per row, not a hash of every row held)."""
        return sql.SQL(
            "NOT EXISTS (SELECT FROM {hist} AS argus_h WHERE {h_hash} = "
            "hash_record_extended({row}, 0) AND ROW({h}) IS NOT DISTINCT FROM {row} "
            "OFFSET 0)").format(hist=node.hist, h_hash=row_hash(node.columns, "argus_h"),
                                h=cols(node.columns, "argus_h"), row=row)

    def _prune(self, node: Node) -> sql.Composed:
        """The step's row, cast to the columns' types: a value hashes by its type (the
        step's integer 1 is not the numeric 1 held), and a bare constant has none."""
        return self._unheld(node, sql.SQL("ROW({})").format(sql.SQL(", ").join(
            sql.SQL("CAST(({}) AS {})").format(sql.SQL(v), sql.SQL(t))
            for v, t in zip(node.definition["values"], node.types))))

    def _step(self, node: Node, parents: list[Node], r, occurrence, prune) -> sql.Composed:
        """The step's SQL, the relation read as `r`, occurrence i of a stream as
        `occurrence(i, its parent)`."""
        streams = parents[1:]
        by_name = {p.hist_ref[1]: p for p in streams}
        sources = {f"o{i}": occurrence(i, by_name[s])
                   for i, s in enumerate(node.definition["streams"])}
        return sql.SQL(node.definition["step"]).format(r=r, prune=prune, **sources)

    def _base(self, node: Node) -> sql.Composed:
        return sql.SQL(", ").join(sql.Identifier("t1", c) for c in node.definition["base"])

    def create(self, node, parents):
        base_columns = sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier("t1", b), sql.Identifier(c))
            for b, c in zip(node.definition["base"], node.columns))
        probed = [probe_index(node, [c]) for c in node.definition.get("keys", [])]
        return [render("recursive/create", hist=node.hist, base=parents[0].hist,
                       base_columns=base_columns, columns=node.column_list, t1=T1),
                *probed, create_delta(node)]

    def backfill(self, node, parents):
        step = self._step(node, parents, R_ALIAS, lambda i, p: p.hist, sql.SQL("TRUE"))
        with_bound, read = bounded(node, sql.SQL("argus_d"))
        return [render("recursive/backfill", hist=node.hist, columns=node.column_list,
                       base=parents[0].hist, base_columns=self._base(node), t1=T1, step=step,
                       bounded=with_bound, read=read)]

    def evaluate(self, node, parents):
        held = _held(node)
        seeds = [self._step(node, parents, held,
                            lambda i, p, j=j: _new(p) if i == j else _now(p), sql.SQL("TRUE"))
                 for j in range(len(node.definition["streams"]))]
        seed_prune = self._unheld(node, sql.SQL("ROW({})").format(
            cols(node.columns, "argus_seed")))
        step = self._step(node, parents, R_ALIAS, lambda i, p: _now(p), self._prune(node))
        when = any_rows(*parents)
        with_bound, read = bounded(node, sql.SQL("argus_d"))
        return [Step(render("recursive/delta", delta=node.delta, columns=node.column_list,
                            bounded=with_bound, read=read,
                            sign=SIGN_ID, base_delta=parents[0].delta,
                            base_columns=self._base(node), t1=T1,
                            seeds=sql.SQL(" UNION ").join(seeds) if seeds
                            else sql.SQL("SELECT {} FROM {} WHERE FALSE").format(
                                node.column_list, node.hist),
                            seed_prune=seed_prune, step=step), when)]

    def flush(self, node, parents):
        return bag_flush(node)


KIND = register_kind(Kind(
    "recursive", lambda d: None, RecursiveCompiler(),
    lambda node: ["WITH RECURSIVE: the new rows' derivations, round by round (semi-naive), "
                  "none it holds derived again"], hashes_rows=True, symbol="μ",
    first_forms=lambda node: tuple(node.columns)))
