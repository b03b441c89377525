"""DISTINCT nodes: each row with its count of copies."""

from __future__ import annotations

from psycopg import sql

from ..templates import render
from .base import (Kind, register_kind, Node, SIGN_ID, Step, T1, always, any_rows, cols,
                   create_delta, named, row_hash)
from .setop import cols_sql


class DistinctCompiler:
    """One history row per value with its multiplicity (argus_count)."""

    def _slots(self, node: Node) -> dict:
        names = node.columns
        return {"columns": cols(names), "named": named(cols_sql(names, "t1"), names),
                "t1_columns": cols(names, "t1"), "hash": row_hash(names, "t1"),
                "h_columns": cols(names, "h"), "d_columns": cols(names, "d"),
                "kept": sql.SQL(", ").join(
                    sql.SQL("CASE WHEN h.argus_count > 0 THEN h.{c} ELSE d.{c} END").format(
                        c=sql.Identifier(c)) for c in names),
                "t1": T1, "sign": SIGN_ID}

    def create(self, node, parents):
        return [render("distinct/create", hist=node.hist, parent=parents[0].hist,
                       **self._slots(node)),
                render("node/hash_index", hist=node.hist), create_delta(node)]

    def backfill(self, node, parents):
        return [render("distinct/backfill", hist=node.hist, parent=parents[0].hist,
                       **self._slots(node))]

    def evaluate(self, node, parents):
        return [Step(render("distinct/delta", delta=node.delta, hist=node.hist,
                            parent_delta=parents[0].delta, **self._slots(node)))]

    def flush(self, node, parents):
        return [Step(render("distinct/flush", hist=node.hist, parent_delta=parents[0].delta,
                            **self._slots(node)), any_rows(parents[0]))]


KIND = register_kind(Kind("distinct", lambda d: None,  # nothing to define: its columns are its rows
                     DistinctCompiler(),
                     lambda node: ["one row per distinct value, with its multiplicity"],
                     keeps_state=always, hashes_rows=True, symbol="δ",
                     first_forms=lambda node: tuple(node.columns)))
