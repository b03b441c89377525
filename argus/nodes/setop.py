"""Set operation nodes: UNION [ALL], INTERSECT [ALL], EXCEPT [ALL] by counts."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from ..templates import render
from ..trees import qualified
from .base import (Kind, register_kind, Node, SIGN_ID, Step, T1, T2, add_hash, all_rows, always,
                   any_rows, bag_flush, cols, create_delta, row_hash, signed_slots)


def cols_sql(names, prefix: str) -> list[str]:
    return [qualified(prefix, n) for n in names]


_MULTIPLICITY = {
    "intersect": "CASE WHEN {a} > 0 AND {b} > 0 THEN 1 ELSE 0 END",
    "intersect_all": "least({a}, {b})",
    "except": "CASE WHEN {a} > 0 AND {b} = 0 THEN 1 ELSE 0 END",
    "except_all": "greatest({a} - {b}, 0)",
}


@dataclass(frozen=True)
class SetOpSpec:
    """A set operation's definition."""

    op: str  # union, union_all, intersect, intersect_all, except, except_all
    left: tuple[str, ...] | None = None  # the columns each input contributes (a shared
    right: tuple[str, ...] | None = None  # parent may have more); None: all of them

    @classmethod
    def of(cls, d: dict) -> SetOpSpec:
        return cls(d["op"], *(tuple(d[s]) if d.get(s) else None for s in ("left", "right")))

    def columns(self, side: str) -> list[str] | None:
        chosen = getattr(self, side)
        return None if chosen is None else list(chosen)


class SetOpCompiler:
    """UNION ALL as a bag; INTERSECT / EXCEPT (and ALL) by counting each value's copies
    in both inputs (aux table) and emitting the change of the output multiplicity.
    Each input's columns are the ones the definition names (a shared parent may have
    more), matched by position."""

    @staticmethod
    def _source_columns(node: Node, side: str, source: Node) -> list[str]:
        return node.spec.columns(side) or list(source.columns)

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
        union_all = node.spec.op == "union_all"
        template = "setop/create_union_all" if union_all else "setop/create"
        return [render(template, hist=node.hist, aux=node.aux("counts"),
                       left_named=self._named(node, "left", left, "t1"),
                       right_named=self._named(node, "right", right, "t2"),
                       left=left.hist, right=right.hist, t1=T1, t2=T2),
                *([] if union_all else [render("node/hash_index", hist=node.aux("counts"))]),
                *add_hash(node), create_delta(node)]

    def backfill(self, node, parents):
        left, right = parents
        op = node.spec.op
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
        op = node.spec.op
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
            x_columns=sql.SQL(", ").join(sql.SQL("x.{}").format(sql.Identifier(f"argus_k{i}"))
                                         for i in range(len(node.columns))),
            kept=sql.SQL(", ").join(
                sql.SQL("CASE WHEN a.argus_hash IS NULL THEN c.{c} ELSE a.{c} END AS {k}").format(
                    c=sql.Identifier(c), k=sql.Identifier(f"argus_k{i}"))
                for i, c in enumerate(node.columns)),
            x_hash=sql.SQL(", x.argus_hash") if not node.insert_only else sql.SQL(""),
            m_old=sql.SQL(fm.format(a="y.oa", b="y.ob")),
            m_new=sql.SQL(fm.format(a="(y.oa + y.da)", b="(y.ob + y.db)")),
            counts=counts, aux=node.aux("counts"), a_columns=cols(node.columns, "a"),
            c_columns=cols(node.columns, "c")))]

    def flush(self, node, parents):
        left, right = parents
        steps = bag_flush(node)
        if node.spec.op != "union_all":
            counts = self._counts(node, left.delta, right.delta, "t1.argus_sign",
                                  "t2.argus_sign", parents)
            steps.append(Step(render("setop/flush", aux=node.aux("counts"), counts=counts,
                                     a_columns=cols(node.columns, "a"),
                                     c_columns=cols(node.columns, "c"),
                                     columns=node.column_list), any_rows(left, right)))
        return steps


KIND = register_kind(Kind("setop", SetOpSpec.of, SetOpCompiler(),
                     lambda node: [f"{node.spec.op.replace('_', ' ').upper()} of its two "
                                   "parents (columns by position)"],
                     keeps_state=always, hashes_rows=True,
                     first_forms=lambda node: (() if node.spec.op == "union_all"
                                               else tuple(node.columns)),
                     aux_tables=lambda node: ([node.aux("counts")]
                                              if node.spec.op != "union_all" else []),
                     symbol="∪"))
