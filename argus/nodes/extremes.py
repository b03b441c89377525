"""MIN and MAX books of aggregate nodes (nodes.aggregate): how the extreme of a group
is kept as rows come and go, and when the group is read again from the parent. Over
an input that only grows an extreme moves outward alone (aggregate.outward) and
nothing here runs."""

from __future__ import annotations

from psycopg import sql

from ..aggregates import Book, Model, Spec
from ..names import std_alias
from ..templates import render
from .base import (Node, SIGN_ID, T1, cols, expr_hash, identical_when_equal, named, row_hash,
                   same_row)


def group_by(model: Model, alias: str) -> sql.Composable:
    if model.is_global:
        return sql.SQL("")
    return sql.SQL(" GROUP BY {}").format(cols(model.group_names, alias))


def windowed(model: Model, source: sql.Composable, windows: list) -> sql.Composable:
    """`source` with `windows` (window aggregates OVER argus_w, each group's rows)."""
    if not windows:
        return source
    return sql.SQL("(SELECT {t1}.*{windows} FROM {source} AS {t1} WINDOW argus_w AS ({by}))"
                   ).format(t1=T1, windows=sql.SQL("").join(windows), source=source,
                            by=sql.SQL("") if model.is_global else sql.SQL(
                                "PARTITION BY {}").format(
                                sql.SQL(", ").join(map(sql.SQL, model.group_exprs))))


def reread(node: Node, model: Model, spec: Spec, book: Book, parent: Node, extreme: sql.SQL
           ) -> tuple[sql.Composable, sql.Composed]:
    """A MIN/MAX book kept without a count (over a parent that retracts rows, in a node
    that is not counted): every group a retraction reached is read again from the parent
    (aggregate/minmax). `model`: the node's, or as its delta is read once
    (aggregate._read_once)."""
    k, b = spec.index, sql.Identifier(book.column)
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
                   told=told(node, spec, book),
                   parent_delta=parent.delta, affected=affected,
                   group_named=named(model.group_exprs, model.group_names),
                   t1=T1, sign=SIGN_ID, w_group_by=group_by(model, "w")))


def counted(node: Node, spec: Spec, book: Book, parent: Node, extreme: sql.SQL
            ) -> tuple[sql.Composable, sql.Composed]:
    """A MIN/MAX book kept with how many rows are at the extreme (its count book):
    the new extreme L is the old one's or the inserted rows' (least/greatest), its
    count the old count at L, plus the inserted rows at L, less the retracted rows
    at L (retracted rows are never beyond L). The group is re-read only when rows
    at L left and none is known to remain (the count unknown after a refill) — or
    any left, where equal values can differ (2.0 and 2.000: the one kept may be the
    one that left; found by a helper)."""
    model = node.spec
    k, b = spec.index, sql.Identifier(book.column)
    c = sql.Identifier(book.column + "count")
    out, outc = sql.Identifier(f"argus_x{k}_out"), sql.Identifier(f"argus_x{k}_outc")
    at = sql.SQL("{f}(o.{b}, dh.{b})").format(f=extreme, b=b)
    count = sql.SQL("(CASE WHEN o.{b} = {at} THEN o.{c} ELSE 0 END"
                    " + CASE WHEN dh.{b} = {at} THEN dh.{c} ELSE 0 END"
                    " - CASE WHEN dh.{out} = {at} THEN dh.{outc} ELSE 0 END)").format(
        b=b, c=c, at=at, out=out, outc=outc)
    need = sql.SQL("(dh.{out} = {at} AND NOT coalesce({count} > 0, false))").format(
        out=out, at=at, count=count) if not differs(node, spec, book) else sql.SQL(
        "(dh.{out} = {at})").format(out=out, at=at)
    cte = sql.Identifier(f"mm{k}")
    merge = sql.SQL(", CASE WHEN {need} THEN {cte}.v ELSE {at} END AS {b}"
                    ", CASE WHEN {need} THEN {cte}.c ELSE {count} END AS {c}").format(
        need=need, cte=cte, at=at, b=b, c=c, count=count)
    groups = sql.SQL("dh LEFT JOIN o ON {}").format(
        sql.SQL("TRUE") if model.is_global else same_row(model.group_names, "o", "dh"))
    # (EXISTS first: computed once, it skips the parent's scan when no group needs it)
    needy = sql.SQL("SELECT dh.argus_hash FROM {} WHERE {}").format(groups, need)
    affected = sql.SQL("EXISTS ({})").format(needy)
    if not model.is_global:
        affected = sql.SQL("{} AND {} IN ({})").format(
            affected, expr_hash(model.group_exprs), needy)
    gnames = model.group_names
    return merge, render(
        "aggregate/minmax_counted", k=sql.SQL(str(k)),
        comma=sql.SQL("") if model.is_global else sql.SQL(", "),
        w_groups=cols(gnames, "w"), w_hash=row_hash(gnames, "w"), u_groups=cols(gnames, "u"),
        partition=sql.SQL("") if model.is_global else sql.SQL("PARTITION BY {} ").format(
            cols(gnames, "x")),
        count=sql.SQL("sum(x.c) OVER (PARTITION BY {}x.v)").format(
            sql.SQL("") if model.is_global else sql.SQL("{}, ").format(cols(gnames, "x")))
        if differs(node, spec, book) else sql.SQL("x.c"),
        order=sql.SQL("ASC" if book.combine == "min" else "DESC"),
        x=sql.SQL(book.value), parent=parent.hist, parent_delta=parent.delta,
        affected=affected, group_named=named(model.group_exprs, gnames), t1=T1, sign=SIGN_ID,
        told=told(node, spec, book))


def counted_delta(model: Model, source: sql.Composable):
    """(the parent's delta (`source`) with, per group, the extreme of each MIN/MAX book's
    inserted and retracted rows; the delta's columns that count the rows at them)."""
    windows, deltas = [], []
    for spec, book, count in model.counted_extremes:
        k, value = spec.index, sql.SQL(book.value)
        for side, op in (("in", ">"), ("out", "<")):
            windows.append(sql.SQL(", {f}({v}) FILTER (WHERE {t1}.{s} {op} 0) OVER argus_w "
                                   "AS {w}").format(
                f=sql.SQL(book.combine), v=value, t1=T1, s=SIGN_ID, op=sql.SQL(op),
                w=sql.Identifier(f"argus_w{k}_{side}")))
        win_in, win_out = (sql.Identifier(std_alias(1), f"argus_w{k}_{side}")
                           for side in ("in", "out"))
        deltas += [
            sql.SQL(", coalesce(sum({t1}.{s}) FILTER (WHERE {t1}.{s} > 0 AND ({v}) = {w}), 0)"
                    " AS {c}").format(t1=T1, s=SIGN_ID, v=value, w=win_in,
                                      c=sql.Identifier(count.column)),
            sql.SQL(", min({w}) AS {out}").format(
                w=win_out, out=sql.Identifier(f"argus_x{k}_out")),
            sql.SQL(", coalesce(-sum({t1}.{s}) FILTER (WHERE {t1}.{s} < 0 AND ({v}) = {w}), 0)"
                    " AS {c}").format(t1=T1, s=SIGN_ID, v=value, w=win_out,
                                      c=sql.Identifier(f"argus_x{k}_outc"))]
    return windowed(model, source, windows), deltas


def differs(node: Node, spec: Spec, book: Book) -> bool:
    """Whether a MIN/MAX's equal values can differ (2.0 and 2.000: the extreme is the
    one that remains; found by a helper), or its type is not known yet. The largest
    scale a numeric sum keeps (its "d" book) is an integer: a row leaving it re-reads
    the group only when it was the last at that scale (else every deletion re-read its
    group: TPC-H Q9's sum, docs/performance.md)."""
    if book.suffix != "m":
        return False
    kind = dict(zip(node.columns, node.types)).get(spec.name)
    return not (kind and identical_when_equal(kind))


def told(node: Node, spec: Spec, book: Book) -> sql.SQL:
    """A re-read's values grouped apart from equal ones of other text, where they can
    differ (aggregate/minmax_counted counts them together again)."""
    return sql.SQL(", (u.v)::text" if differs(node, spec, book) else "")
