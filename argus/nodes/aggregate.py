"""Aggregate nodes: GROUP BY with algebraic aggregates kept in books
(`argus.aggregates`), one history row per group, updated in place."""

from __future__ import annotations

from dataclasses import replace

from psycopg import sql
from sqlglot import exp

from ..aggregates import Book, Family, Model, Spec, entries
from ..names import std_alias
from ..templates import render
from ..trees import qualified, tree_of
from . import extremes
from .extremes import group_by, windowed
from .base import (Kind, Probe, register_kind, Node, SIGN_ID, Step, T1, always, any_rows,
                   as_texts, cols, create_delta, expr_hash, named,
                   passed_on, row_hash, same_row, tid_column, tid_scan, unqualified, var,
                   virtual)


def _found(node: Node, row: str, delta: str) -> sql.Composable:
    """How a flush finds a delta row's group in `row`: by the ctid the delta carries
    (aggregate/delta), or on Citus, where a sharded history's ctid names a row only
    within a shard and Citus plans no modification by ctid, by the group's values."""
    if node.sharded_by is None:
        return sql.SQL(f"{row}.{'ctid' if row == 'h' else 'argus_ctid'} = {delta}.argus_ctid")
    return same_row(node.spec.group_names, row, delta)


def _probed(node: Node, sign: str) -> sql.Composable:
    """The history's rows a flush changes, by a TID scan (base.tid_scan). Not on Citus,
    where the rows are found by their groups (_found)."""
    if node.sharded_by is not None:
        return sql.SQL("")
    return tid_scan(node.delta, sign)


# A delta of fewer groups than 1/PROBE_RATIO of the history's rows finds their rows by
# the history's hash index, one probe per group (aggregate/old_probed): a probe costs
# about what hashing 7 history rows does.
PROBE_RATIO = 8


def _old_rows(node: Node, model: Model) -> sql.Composed:
    """The CTE `o`: the delta's groups' rows in the history, with their ctids. Probed
    by group (aggregate/old_probed) unless the node has one group, or its history is
    held by Citus (whose planner takes no LATERAL probe of a distributed table)."""
    match = same_row(model.group_names, "h", "dh")
    if model.is_global or node.sharded_by is not None or node.on_workers:
        return sql.SQL("o AS (\n    SELECT h.ctid AS argus_ctid, h.* FROM {} AS h JOIN dh ON {}"
                       "\n)").format(node.hist, sql.SQL("TRUE") if model.is_global else match)
    return render("aggregate/old_probed", ratio=sql.Literal(PROBE_RATIO), hist=node.hist,
                  id=sql.Literal(node.id), match_h=match)


def grows(node: Node, parent: Node) -> bool:
    """The aggregate's input only grows: its parent is insert-only, or (layout
    "grows", set by the network) it regroups the books of an aggregate over such an
    input, whose groups never vanish, whose counts only rise and whose MIN/MAX books
    only move outward, although each change of a group reaches its children as a
    retraction and an insertion."""
    return parent.insert_only or bool(node.layout.get("grows"))


def outward(node: Node, parent: Node) -> bool:
    """Its MIN/MAX books only move outward: its input grows, or (layout "outward",
    set by the network) each reads a growing aggregate's counts or extremes that move
    its way. An extreme then never leaves: no group is read again from the parent."""
    return grows(node, parent) or bool(node.layout.get("outward"))


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

    def _same_group(self, model: Model, other: str) -> sql.Composable:
        """`other` (a CTE of per-group results) is dh's group: equal hashes, so that
        PostgreSQL hash-joins them, then equal values."""
        if model.is_global:
            return sql.SQL("TRUE")
        return same_row(model.group_names, other, "dh")

    def from_scratch(self, model: Model, parent: Node) -> sql.Composed:
        """Every group from the parent's rows; a counted node's rows at each extreme
        counted beside it, the extreme found first by a window over each group."""
        counts, windows = {}, []
        for spec, book, count in model.counted_extremes:
            name = f"argus_e{spec.index}"
            counts[count.column] = sql.SQL("count(*) FILTER (WHERE ({}) = {})").format(
                sql.SQL(book.value), sql.Identifier(std_alias(1), name))
            windows.append(sql.SQL(", {}({}) OVER argus_w AS {}").format(
                sql.SQL(book.combine), sql.SQL(book.value), sql.Identifier(name)))
        books = [sql.SQL(", {} AS {}").format(
                     counts.get(b.column) or sql.SQL(b.over(s.arg, "1::smallint")),
                     sql.Identifier(b.column)) for s, b in model.books]
        return render("aggregate/select", n_hash=row_hash(model.group_names, "n"),
                      book_backfill=sql.SQL("").join(books),
                      parent=windowed(model, parent.hist, windows), **self._slots(model))

    @staticmethod
    def _computed_once(model: Model, source: sql.Composable
                       ) -> tuple[sql.Composable, dict[str, str]]:
        """`source` with each argument that is more than a column computed once per row
        (fenced by OFFSET 0, which PostgreSQL does not flatten): a sum's books read its
        argument up to six times (the value, its count, NaN and ±Infinity), and TPC-H
        Q1's l_extendedprice * (1 - l_discount) * (1 + l_tax) was computed that often."""
        args = sorted({spec.arg for spec, book in model.books if spec.arg is not None
                       and book.combine not in ("distinct", "count")
                       and not _column(spec.arg)})
        if not args:
            return source, {}
        names = {arg: f"argus_arg{i}" for i, arg in enumerate(args)}
        return (sql.SQL("(SELECT {t1}.*{args} FROM {source} AS {t1} OFFSET 0)").format(
            t1=T1, source=source, args=sql.SQL("").join(
                sql.SQL(", {} AS {}").format(sql.SQL(arg), sql.Identifier(name))
                for arg, name in names.items())),
                {arg: qualified("t1", name) for arg, name in names.items()})

    def _pairs(self, node: Node, model: Model, family: Family,
               source: sql.Composable) -> sql.Composed:
        gnames = model.group_names
        return render(
            "aggregate/count_distinct_pairs", aux=node.aux(f"d{family.index}"),
            olds=sql.SQL("").join(sql.SQL(", coalesce(a.{}, 0) AS {}").format(
                sql.Identifier(family.count_column(m)), sql.Identifier(f"old{m.index}"))
                for m, _ in family.members),
            values=self._values(model, family, source, "t1.argus_sign"),
            a_key=cols(gnames + ["v"], "a"), dd_key=cols(gnames + ["v"], "dd"))

    def _aux_applied(self, node: Node, model: Model, family: Family, parent: Node,
                     source: sql.Composable) -> sql.Composed:
        """The family's aux table maintained by the statement that counts its changes
        (aggregate/aux_apply: its top-level CTEs)."""
        counts = [(sql.Identifier(family.count_column(m)), sql.Identifier(f"dn{m.index}"),
                   sql.Identifier(f"old{m.index}")) for m, _ in family.members]
        i = family.index
        moves = sql.SQL(" OR ").join(sql.SQL("x.{} <> 0").format(dn) for _, dn, _ in counts)
        vanish = sql.SQL(" AND ").join(sql.SQL("x.{} + x.{} = 0").format(old, dn)
                                       for _, dn, old in counts)
        changes = (sql.SQL("({})").format(sql.SQL(" OR ").join(
                       sql.SQL("x.{} = 0 AND x.{} <> 0").format(old, dn) for _, dn, old in counts))
                   if parent.insert_only else  # (not a regroup's growth: its rows retract)
                   sql.SQL("({}) AND NOT ({})").format(moves, vanish))
        return render(
            "aggregate/aux_apply", aux=node.aux(f"d{i}"), changes=changes,
            read=self._pairs(node, model, family, source),
            pairs=sql.Identifier(f"argus_x{i}"), updated=sql.Identifier(f"argus_u{i}"),
            deleted=sql.Identifier(f"argus_r{i}"), inserted=sql.Identifier(f"argus_i{i}"),
            key=cols(model.group_names + ["v"]), x_key=cols(model.group_names + ["v"], "x"),
            counts=sql.SQL("").join(sql.SQL(", {}").format(n) for n, _, _ in counts),
            x_counts=sql.SQL("").join(sql.SQL(", x.{}").format(dn) for _, dn, _ in counts),
            vanish=vanish, moves=moves,
            updates=sql.SQL(", ").join(sql.SQL("{n} = a.{n} + x.{dn}").format(n=n, dn=dn)
                                       for n, dn, _ in counts))

    def _values(self, model: Model, family: Family, source: sql.Composable,
                count: str) -> sql.Composed:
        """(group, value) pairs of a COUNT(DISTINCT value) family with each member's
        signed count of rows (those its FILTER passes)."""
        counts, conditions = [], []
        for spec, condition in family.members:
            counted = sql.SQL("sum({})").format(sql.SQL(count))
            if condition is not None:
                counted = sql.SQL("coalesce(sum({}) FILTER (WHERE {}), 0)").format(
                    sql.SQL(count), sql.SQL(condition))
                conditions.append(sql.SQL("({})").format(sql.SQL(condition)))
            counts.append(sql.SQL(", {} AS {}").format(counted, sql.Identifier(f"dn{spec.index}")))
        also = sql.SQL("") if len(conditions) < len(family.members) else sql.SQL(
            " AND ({})").format(sql.SQL(" OR ").join(conditions))
        return render("aggregate/values", group_named=named(model.group_exprs, model.group_names),
                      comma=sql.SQL("") if model.is_global else sql.SQL(", "),
                      x=sql.SQL(family.value), counts=sql.SQL("").join(counts), also=also,
                      hash=expr_hash(model.group_exprs + [f"({family.value})"]),
                      source=source, t1=T1,
                      group_exprs=sql.SQL(", ").join(map(sql.SQL, model.group_exprs)))

    @staticmethod
    def _member_columns(family: Family, prefix: str = "") -> sql.Composable:
        return sql.SQL("").join(sql.SQL(", {}").format(
            sql.Identifier(prefix + family.count_column(spec))) for spec, _ in family.members)

    def aux_create(self, node: Node, parent: Node) -> list[sql.Composable]:
        model = node.spec
        return [statement for family in model.families for statement in (
            render("aggregate/aux_create", aux=node.aux(f"d{family.index}"),
                   x=sql.SQL(family.value), parent=parent.hist,
                   counts=sql.SQL("").join(
                       sql.SQL(", ADD COLUMN {} bigint NOT NULL").format(
                           sql.Identifier(family.count_column(spec)))
                       for spec, _ in family.members),
                   group_named=named(model.group_exprs, model.group_names),
                   comma=sql.SQL("") if model.is_global else sql.SQL(", "), t1=T1),
            render("node/hash_index", hist=node.aux(f"d{family.index}")))]

    def aux_backfill(self, node: Node, parent: Node) -> list[sql.Composable]:
        model = node.spec
        return [render("aggregate/aux_backfill", aux=node.aux(f"d{family.index}"),
                       key=cols(model.group_names + ["v"]),
                       counts=self._member_columns(family),
                       values=self._values(model, family, parent.hist, "1"))
                for family in model.families]

    def create(self, node, parents):
        model, parent = node.spec, parents[0]
        # fillfactor 50: groups are updated in place; free room in each page makes those
        # updates HOT, so the page's dead versions are pruned without waiting for VACUUM
        out = [sql.SQL("CREATE TABLE {} WITH (fillfactor = 50) AS {} WITH NO DATA").format(
                   node.hist, self.from_scratch(model, parent)),
               render("node/hash_index", hist=node.hist),
               create_delta(node), tid_column(node)]
        return out + self.aux_create(node, parent) + self.parent_index(node, parent)

    @staticmethod
    def parent_index(node: Node, parent: Node) -> list[sql.Composable]:
        """MIN/MAX under retraction re-read the parent's rows of the affected groups."""
        model = node.spec
        if not (model.group_exprs and not outward(node, parent) and model.has_extremes) \
                or virtual(parent):  # a view: its aggregate's groups are few
            return []
        return [render("aggregate/parent_index", name=sql.Identifier(parent_index_name(node.id)),
                       parent=parent.hist,
                       hash=expr_hash([unqualified(e) for e in model.group_exprs]))]

    def backfill(self, node, parents):
        model, parent = node.spec, parents[0]
        return [sql.SQL("INSERT INTO {} ({}) {}").format(
            node.hist, cols(model.stored + ["argus_hash"]), self.from_scratch(model, parent)),
            *self.aux_backfill(node, parent)]

    def _combine(self, node: Node, model: Model, spec: Spec, book: Book, parent: Node):
        """(merged bookkeeping column, extra CTE, its join) for one book."""
        b, k = sql.Identifier(book.column), spec.index
        if book.combine == "add":
            return sql.SQL(", CASE WHEN dh.{b} IS NULL THEN o.{b} WHEN o.{b} IS NULL THEN dh.{b} "
                           "ELSE o.{b} + dh.{b} END AS {b}").format(b=b), None
        if book.combine == "distinct":  # the family's CTE, computed with its first member
            family = model.family_of(spec)
            cte = sql.Identifier(f"cd{family.index}")
            merge = sql.SQL(", coalesce(o.{b}, 0) + coalesce({cte}.{c}, 0) AS {b}").format(
                b=b, cte=cte, c=sql.Identifier(f"c{k}"))
            if family.index != k:
                return merge, None
            gnames = model.group_names
            pairs = (sql.Identifier(f"argus_x{family.index}") if _applied_in_evaluation(node)
                     else sql.SQL("({})").format(self._pairs(node, model, family, parent.delta)))
            return merge, render(
                "aggregate/count_distinct", name=cte, pairs=pairs,
                comma=sql.SQL("") if model.is_global else sql.SQL(", "),
                changes=sql.SQL(", ").join(render(
                    "aggregate/count_distinct_change", old=sql.Identifier(f"old{m.index}"),
                    dn=sql.Identifier(f"dn{m.index}"), c=sql.Identifier(f"c{m.index}"))
                    for m, _ in family.members),
                x_groups=cols(gnames, "x"), x_hash=row_hash(gnames, "x"),
                x_group_by=group_by(model, "x"))
        if book.combine == "count":  # merged with its extreme's book
            return sql.SQL(""), None
        extreme = sql.SQL("least" if book.combine == "min" else "greatest")
        if outward(node, parent):  # extremes only move outward: old vs inserted
            return sql.SQL(", {f}(o.{b}, dh.{b}) AS {b}").format(f=extreme, b=b), None
        if model.counted:
            return extremes.counted(node, spec, book, parent, extreme)
        return extremes.reread(node, model, spec, book, parent, extreme)

    def evaluate(self, node, parents):
        parent = parents[0]
        once = _read_once(node, parent)
        model, read = (node.spec, parent.delta) if once is None else (once, READ_ONCE)
        deltas, merges, ctes, joins = [], [], [], []
        source, computed = self._computed_once(model, read)
        if model.counted and not grows(node, parent):
            source, deltas = extremes.counted_delta(model, source)
        for spec, book in model.books:
            merge, cte = self._combine(node, model, spec, book, parent)
            merges.append(merge)
            if book.combine not in ("distinct", "count"):
                deltas.append(sql.SQL(", {} AS {}").format(
                    sql.SQL(book.over(computed.get(spec.arg, spec.arg), '"t1"."argus_sign"')),
                    sql.Identifier(book.column)))
            if cte is not None:
                ctes.append(cte)
                name = f"{'cd' if book.combine == 'distinct' else 'mm'}{spec.index}"
                joins.append(sql.SQL(" LEFT JOIN {} ON {}").format(
                    sql.Identifier(name), self._same_group(model, name)))
        gnames, stored = model.group_names, model.stored

        def told(alias: str) -> sql.Composable:  # (2.0 to 2 is a change: found by a helper)
            return sql.SQL(", ").join([cols(stored, alias),
                                       *as_texts(node.columns, node.types, alias)])

        def changed(this: str, other: str) -> sql.Composable:
            if grows(node, parent):  # every group in the delta gained rows: it changed
                return sql.SQL("")
            return sql.SQL("\n") + render("aggregate/changed", this=sql.Identifier(this),
                                          other=sql.Identifier(other),
                                          this_stored=told(this), other_stored=told(other))

        statement = render(
            "aggregate/delta", delta=node.delta, stored=cols(stored), hist=node.hist,
            book_delta=sql.SQL("").join(deltas), parent_delta=source,
            d_hash=row_hash(gnames, "d"), dh_groups=cols(gnames, "dh"),
            old_rows=_old_rows(node, model),
            match_o=sql.SQL("TRUE") if model.is_global else same_row(gnames, "o", "dh"),
            ctes=sql.SQL("").join(sql.SQL(", ") + cte for cte in ctes),
            book_merge=sql.SQL("").join(merges), joins=sql.SQL("").join(joins),
            o_stored=cols(stored, "o"), f_stored=cols(stored, "f"),
            o_changed=changed("o", "f"), f_changed=changed("f", "o"), **self._slots(model))
        applied = [self._aux_applied(node, model, family, parent, read)
                   for family in model.families] if _applied_in_evaluation(node) else []
        if once is not None:
            applied.insert(0, _read_once_cte(node, parent, sql.Composed([statement, *applied])))
        return [Step(statement, ctes=sql.SQL(", ").join(applied) if applied else None)]

    def flush(self, node, parents):
        """One row per group: update changed groups in place, insert new ones, delete
        the ones that vanished; then the COUNT(DISTINCT) per-value counts."""
        model, parent = node.spec, parents[0]
        gnames, stored = model.group_names, model.stored
        slots = {"hist": node.hist, "delta": node.delta, "sign": SIGN_ID,
                 "stored": cols(stored), "d_stored": cols(stored, "d"),
                 "found": _found(node, "h", "d"), "renewed": _found(node, "p", "d"),
                 "updated": _probed(node, ">")}
        written = [c for c in stored if c != node.sharded_by]  # (Citus: not the shard key)
        when = sql.SQL("{} > 0").format(var(node.id))
        steps = [Step(render("node/flush_update", **{
            **slots, "stored": cols(written), "d_stored": cols(written, "d")}), when)]
        if not model.is_global:  # a global aggregate's one row never appears or vanishes
            steps.append(Step(render("aggregate/flush_insert", **slots), when))
            if not grows(node, parent):  # groups vanish only when rows leave
                steps.append(Step(render("aggregate/flush_delete" if node.sharded_by
                                         else "node/flush_delete_tid", **slots), when))
        # (the aux tables: kept by evaluate's statement, unless on Citus)
        for family in [] if _applied_in_evaluation(node) else model.families:
            counts = [(sql.Identifier(family.count_column(m)), sql.Identifier(f"dn{m.index}"))
                      for m, _ in family.members]
            steps.append(Step(render(
                "aggregate/aux_flush", aux=node.aux(f"d{family.index}"),
                values=self._values(model, family, parent.delta, "t1.argus_sign"),
                a_key=cols(gnames + ["v"], "a"), d_key=cols(gnames + ["v"], "d"),
                key=cols(gnames + ["v"]), counts=self._member_columns(family),
                d_counts=sql.SQL("").join(sql.SQL(", d.{}").format(dn) for _, dn in counts),
                vanish=sql.SQL(" AND ").join(sql.SQL("a.{} + d.{} = 0").format(n, dn)
                                             for n, dn in counts),
                moves=sql.SQL(" OR ").join(sql.SQL("d.{} <> 0").format(dn) for _, dn in counts),
                updates=sql.SQL(", ").join(sql.SQL("{n} = a.{n} + d.{dn}").format(n=n, dn=dn)
                                           for n, dn in counts)), any_rows(parent)))
        return steps


def describe(node: Node) -> list[str]:
    model = node.spec
    groups = ", ".join(e for _, e in model.groups) or "(one global group)"
    aggs = ", ".join(f"{e.name} = {e.func}({'DISTINCT ' if e.distinct else ''}{e.arg or '*'})"
                     for e in entries(node.definition))
    return [f"group by {groups}", f"aggregates: {aggs}"] + (
        ["regrouped from its parent's groups and bookkeeping columns (vertical expansion)"]
        if any(e.regrouped for e in entries(node.definition)) else [])


# The parent's delta read once (_read_once): a CTE of the statement that evaluates the node.
READ_ONCE = sql.Identifier("argus_once")


def _read_once(node: Node, parent: Node) -> Model | None:
    """A node whose COUNT(DISTINCT)s are counted in the statement that evaluates it
    reads its parent's delta once per family and once for its groups, computing each
    group key every time (Nexmark q16: to_char of every bid's time three times): it
    reads a MATERIALIZED CTE instead (_read_once_cte), of the columns the statement uses
    and each group key that is more than a column computed once (_computed_keys). The
    model returned names those keys; None: the node reads its parent's delta directly
    (no family, or a MIN/MAX that may read the parent's history again by the group
    keys)."""
    model = node.spec
    if not model.families or not _applied_in_evaluation(node) or model.counted or any(
            b.combine in ("min", "max") and not outward(node, parent) for _, b in model.books):
        return None
    keys = _computed_keys(model)
    return replace(model, groups=tuple(
        (name, qualified(std_alias(1), keys[e]) if e in keys else e) for name, e in model.groups))


def _computed_keys(model: Model) -> dict[str, str]:
    """Each group key that is more than a column -> the column READ_ONCE computes it in."""
    return {e: f"argus_k{i}" for i, e in enumerate(model.group_exprs) if not _column(e)}


def _read_once_cte(node: Node, parent: Node, reads: sql.Composable) -> sql.Composed:
    """READ_ONCE's definition: the parent's columns that `reads` (the statement and its
    CTEs, rendered over READ_ONCE as "t1") names, its sign, and the computed group keys."""
    text = reads.as_string(None)
    used = [sql.Identifier(std_alias(1), c) for c in parent.columns
            if sql.Identifier(std_alias(1), c).as_string(None) in text]
    keys = [sql.SQL("{} AS {}").format(sql.SQL(e), sql.Identifier(name))
            for e, name in _computed_keys(node.spec).items()]
    return sql.SQL("{} AS MATERIALIZED (SELECT {} FROM {} AS {})").format(
        READ_ONCE, sql.SQL(", ").join([*used, sql.SQL("{}.{}").format(T1, SIGN_ID), *keys]),
        parent.delta, T1)


def _applied_in_evaluation(node: Node) -> bool:
    """Whether the statement that counts a COUNT(DISTINCT)'s changes also applies them
    to its aux tables (one probe per changed (group, value)); on Citus, whose
    distributed tables take no data-modifying CTEs joined by ctid, a MERGE in the flush
    applies them."""
    return node.sharded_by is None


# aggregates whose value is computed from its group's values, the same whichever copy of
# equal values came first; any other (min, max, …) keeps one copy's form
COMPUTED = frozenset({"count", "sum", "avg", "stddev", "stddev_samp", "stddev_pop",
                      "variance", "var_samp", "var_pop", "bool_and", "bool_or", "every"})


def first_forms(node: Node) -> tuple[str, ...]:
    return (*node.spec.group_names,
            *(s.name for s in node.spec.specs if s.func not in COMPUTED))


def _column(expr: str) -> bool:
    return isinstance(tree_of(expr), exp.Column)


KIND = register_kind(Kind(
    "aggregate", Model.of, AggregateCompiler(), describe, keeps_state=always,
    probe=lambda node, parents: [Probe(T1, 0, node.spec.group_exprs
                                       + [s.arg for s in node.spec.specs if s.arg] or ["TRUE"])],
    aux_tables=lambda node: [node.aux(f"d{f.index}") for f in node.spec.families],
    groups=True, copies=passed_on, symbol="γ", first_forms=first_forms,
    shard_keys=lambda node: () if node.spec.distinct_specs else tuple(node.spec.group_names)))
