"""Join nodes: inner joins by the Rete rule, semi, anti and left joins by counting
partners."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql
from sqlglot import exp

from .. import abi
from ..frontend.canon import sargable
from ..templates import render
from ..trees import DIALECT, conjuncts, tree_of
from . import expiry, lazy
from .base import (Kind, Probe, register_kind, Node, SIGN_ID, Step, T1, T2, add_hash, all_rows,
                   bag_flush, cols, create_delta, identical_when_equal, named, row_hash,
                   passed_on, signed_slots, var, virtual)

# A delta this many times smaller than the other side's history probes it row by row by
# its index, whatever the planner would choose: a delta's statistics are an earlier
# cycle's (ANALYZEd only when its row count is misjudged: program/analyze_delta), and
# keys that drifted to ones the history barely holds were estimated as common there — a
# merge join read 403,959 history rows for a 499-row delta that found 474 (issue 52).
PROBE_RATIO = 16


@dataclass(frozen=True)
class JoinSpec:
    """A join's definition."""

    join_type: str  # inner, left, semi or anti
    condition: str  # over t1 (left) and t2 (right)

    @classmethod
    def of(cls, d: dict) -> JoinSpec:
        return cls(d["join_type"], d["condition"])


def join_condition(node: Node, parents: list[Node]) -> str:
    """The join's condition as its statements run it: with its windows sargable on both
    sides (canon.sargable), so that a delta row probes the other side's index within
    its window instead of reading every row of its key."""
    types = {sql.Identifier(alias, c).as_string(None): t
             for alias, parent in zip(("t1", "t2"), parents)
             for c, t in zip(parent.columns, parent.types)}
    return sargable(node.spec.condition, types.get)


def _right_column(expr: str) -> bool:
    """Is the join's column the right input's (t2)? (A join's columns pass its inputs'
    columns through.)"""
    tree = tree_of(expr)
    return isinstance(tree, exp.Column) and tree.table == "t2"


class JoinCompiler:
    """Inner joins by the Rete rule; semi and anti joins (and the NULL-padded part of a
    left join) by counting each left row's partners before and after the deltas."""

    def _slots(self, node: Node, parents: list[Node], exprs=None) -> dict:
        return {**signed_slots(node), "condition": sql.SQL(join_condition(node, parents)),
                "named_exprs": named(exprs or node.exprs, node.columns)}

    def _padded(self, node: Node) -> tuple[str, ...]:
        """A left join's columns for a left row without partner: right side NULL."""
        return tuple(f"CAST(NULL AS {t})" if _right_column(e) else e
                     for e, t in zip(node.exprs, node.types))

    def create(self, node, parents):
        left, right = parents
        if virtual(node):
            return [*self.views(node, parents), create_delta(node)]
        if node.spec.join_type in ("semi", "anti"):
            statement = render("select/create", hist=node.hist, parent=left.hist, t1=T1,
                               named_exprs=node.named_expr_list)
        else:
            statement = render("join/create", hist=node.hist, named_exprs=node.named_expr_list,
                               left=left.hist, right=right.hist, t1=T1, t2=T2)
        if expiry.expiring(node):
            return [statement, *add_hash(node, indexed=False),
                    render("join/create_expiring", hist=node.hist,
                           type=sql.SQL(node.layout["expiry"][2])),
                    render("join/expiry_index", hist=node.hist), create_delta(node)]
        return [statement, *add_hash(node), create_delta(node)]

    def _expiring_slots(self, node: Node, parents: list[Node]) -> dict:
        value, live = expiry.pair(node, parents)
        return {**self._slots(node, parents), "hash": row_hash(node.columns, "s"),
                "expiry": sql.SQL(value), "live": sql.SQL(live)}

    def views(self, node: Node, parents: list[Node]) -> list[sql.Composed]:
        """A virtual join's history (join/create_view) and, if it was ever deferred, the
        view its query's changes view reads; only inner insert-only joins are made
        virtual (network.builder), so that it needs no argus_hash."""
        left, right = parents
        slots = {"named_exprs": node.named_expr_list, "t1": T1, "t2": T2,
                 "condition": sql.SQL(join_condition(node, parents)), "left": left.hist,
                 "right": right.hist}
        views = [render("join/create_view", view=node.hist, **slots)]
        if deferred(node):
            slots |= {"view": changes(node), "sign": SIGN_ID, "left_delta": left.delta_table,
                      "right_delta": right.delta_table}
            if all(identical_when_equal(t, text=False) for t in node.types):
                views.append(render("join/changes_exact", **slots))
            else:
                views.append(render("join/changes", s_columns=cols(node.columns, "s"),
                                    texts=sql.SQL(", ").join(sql.SQL("({})::text").format(
                                        sql.SQL(e)) for e in node.exprs), **slots))
        elif "deferred" in node.layout:
            views.append(render("join/changes_passed", view=changes(node), sign=SIGN_ID,
                                columns=node.column_list, delta=node.delta_table))
        return views

    def backfill(self, node, parents, limit: int | None = None):
        """`limit`: insert no more than that many rows (an inner join that is to be a
        view past them: network.builder)."""
        if virtual(node):
            return []
        left, right = parents
        join_type = node.spec.join_type
        if expiry.expiring(node):
            return [render("join/backfill_expiring", hist=node.hist, left=left.hist,
                           right=right.hist, **self._expiring_slots(node, parents))]
        statements = []
        if join_type in ("inner", "left"):
            statements.append(render("join/backfill", hist=node.hist, left=left.hist,
                                     right=right.hist, **self._slots(node, parents),
                                     limit=sql.SQL("") if limit is None else
                                     sql.SQL(" LIMIT {}").format(sql.Literal(limit))))
        if join_type != "inner":
            exprs = self._padded(node) if join_type == "left" else None
            statements.append(render("join/partners_backfill", hist=node.hist, left=left.hist,
                                     right=right.hist, **self._slots(node, parents, exprs),
                                     negate=sql.SQL("" if join_type == "semi" else "NOT")))
        return statements

    def evaluate(self, node, parents):
        if deferred(node):  # its changes are a view (join/changes.sql)
            return [Step(statement, all_rows(parent))
                    for parent, statement in guards(node, parents, "delta")]
        left, right = parents
        join_type = node.spec.join_type
        if expiry.expiring(node):
            return self._expiring_terms(node, parents)
        steps = []
        if join_type in ("inner", "left"):
            slots = self._slots(node, parents)
            for deltas, when, sources in _terms(node, parents):
                signs = sql.SQL(" * ").join(sql.SQL("{}.{}").format(sql.Identifier(t), SIGN_ID)
                                            for t in deltas)
                steps.append(Step(render("join/term", delta=node.delta, sources=sources,
                                         sign_expr=signs, **slots), when))
        if join_type != "inner":
            exprs = self._padded(node) if join_type == "left" else None
            slots = self._slots(node, parents, exprs)
            present_when_matched = join_type == "semi"
            growing = "_growing" if right.insert_only else ""
            steps.append(Step(render(f"join/partners_new_rows{growing}", delta=node.delta,
                                     left_delta=left.delta, right=right.hist,
                                     right_delta=right.delta,
                                     test=sql.SQL("> 0" if present_when_matched else "= 0"),
                                     negate=sql.SQL("" if present_when_matched else "NOT"),
                                     **slots), all_rows(left)))
            gained, lost = ("1", "-1") if present_when_matched else ("-1", "1")
            keyed = any(isinstance(other, exp.Column)  # (an index of the right serves it)
                        for _, other in _key_pairs(join_condition(node, parents))[0])
            partners = render("join/partners_needed" if keyed else "join/partners_all",
                              right=right.hist, **slots)
            steps.append(Step(render(f"join/partners_changed{growing}", delta=node.delta,
                                     left=left.hist, right=right.hist, right_delta=right.delta,
                                     on_gained=sql.SQL(gained), on_lost=sql.SQL(lost),
                                     keyed=_keyed(join_condition(node, parents), right.delta),
                                     partners=partners, **slots),
                              all_rows(right)))
        return steps

    def _expiring_terms(self, node: Node, parents: list[Node]) -> list[Step]:
        """The Rete rule over the inputs' new rows, and the rows that left (nodes/expiry)."""
        slots = self._expiring_slots(node, parents)
        steps = []
        for deltas, when, sources in _terms(node, parents):
            new = sql.SQL("").join(sql.SQL("{}.{} > 0 AND ").format(sql.Identifier(t), SIGN_ID)
                                   for t in deltas)
            steps.append(Step(render("join/term_expiring", delta=node.delta, sources=sources,
                                     new=new, **slots), when, sign=1))
        steps.append(Step(render("node/expire", delta=node.delta, hist=node.hist,
                                 columns=node.column_list, t1_columns=cols(node.columns, "t1"),
                                 expired=sql.SQL(expiry.expired(node)), t1=T1, sign=SIGN_ID),
                          abi.v(abi.CLOCK_MOVED), sign=-1))
        return steps

    def flush(self, node, parents):
        if lazy.keys(node):
            return [lazy.flush(node)]
        if expiry.expiring(node):
            return expiry.flush(node, expiry.expired(node), ["argus_hash", expiry.COLUMN])
        return [] if virtual(node) else bag_flush(node)


def _terms(node: Node, parents: list[Node]
           ) -> list[tuple[tuple[str, ...], sql.Composable, sql.Composable]]:
    """The Rete rule's terms ΔA⋈B_old, A_old⋈ΔB, ΔA⋈ΔB: per term, the aliases that read
    a delta, when it runs, and its FROM. A term of a delta and a history the delta can
    probe comes twice: as a LATERAL probe of the history (fenced by OFFSET 0, which the
    planner cannot turn into a hash or merge join) when the delta is under 1/PROBE_RATIO
    of the history's rows (node_stats.hist_rows, read once a cycle: abi.HISTORY_ROWS), else
    as the planner's join."""
    left, right = parents
    condition = sql.SQL(join_condition(node, parents))
    terms = []
    for deltas, lt, rt, when, probed in (
            (("t1",), left.delta, right.hist, all_rows(left), 1),
            (("t2",), left.hist, right.delta, all_rows(right), 0),
            (("t1", "t2"), left.delta, right.delta, all_rows(left, right), None)):
        joined = sql.SQL("{} AS {} JOIN {} AS {} ON {}").format(lt, T1, rt, T2, condition)
        if probed is None or not _probed(node, parents, probed):
            terms.append((deltas, when, joined))
            continue
        small = sql.SQL("{} * {} < coalesce({}, 0)").format(
            var(parents[1 - probed].id), sql.Literal(PROBE_RATIO),
            abi.at(abi.HISTORY_ROWS, parents[probed].id))
        outer, inner = (lt, rt) if probed else (rt, lt)
        alias, other = (T2, T1) if probed else (T1, T2)
        terms += [(deltas, sql.SQL("{} AND {}").format(when, small), sql.SQL(
                       "{} AS {} CROSS JOIN LATERAL (SELECT * FROM {} AS {} WHERE {} OFFSET 0)"
                       " AS {}").format(outer, other, inner, alias, condition, alias)),
                  (deltas, sql.SQL("{} AND NOT ({})").format(when, small), joined)]
    return terms


def _probed(node: Node, parents: list[Node], side: int) -> bool:
    """May the other side's delta probe this side's history row by row? Only a table
    (not a view, nor a lazy join's partial one), of another node than the delta's, not
    on Citus workers, whose first column the condition equates with the other side's
    (network.indexes.join_keys indexed it first for the join) is equated with a column
    of a type that index serves. (An integer column equated with a numeric one is
    compared as numeric: no index of it serves, and each delta row read the whole
    history — 15 s a cycle.)"""
    probed, other = parents[side], parents[1 - side]
    if (virtual(probed) or lazy.is_lazy(probed) or probed.id == other.id
            or any(n.sharded_by or n.on_workers for n in (node, probed, other))):
        return False
    alias = ("t1", "t2")[side]
    mine, found = next((pair for pair in _equalities(join_condition(node, parents))
                        if pair[0].table == alias), (None, None))
    return isinstance(found, exp.Column) and _index_serves(
        dict(zip(probed.columns, probed.types)).get(mine.name),
        dict(zip(other.columns, other.types)).get(found.name))


# types whose equality an index of either serves (one B-tree operator family; not
# failures._COMPARED's, which PostgreSQL compares without failing: an integer equated
# with a numeric is compared as numeric, which no integer index serves)
_FAMILIES = ({"smallint", "integer", "bigint"}, {"real", "double precision"},
             {"text", "character varying"})


def _index_serves(mine: str | None, other: str | None) -> bool:
    """Does an index of a column of type `mine` serve its equality with `other`? The
    same type (its length or precision aside), or one family's."""
    if mine is None or other is None:
        return False
    mine, other = (t.split("(")[0].strip() for t in (mine, other))
    return mine == other or any({mine, other} <= family for family in _FAMILIES)


def _equalities(condition: str) -> list[tuple[exp.Column, exp.Expression]]:
    """The condition's top-level equalities of a column of one side and an expression
    of the other side's columns only, as (column, expression): each side's columns so
    equated are indexed (network.indexes.join_keys)."""
    found = []
    for conjunct in conjuncts(tree_of(condition)):
        if isinstance(conjunct, exp.EQ):
            for mine, other in ((conjunct.left, conjunct.right), (conjunct.right, conjunct.left)):
                if isinstance(mine, exp.Column) and mine.table in ("t1", "t2") and {
                        c.table for c in other.find_all(exp.Column)} == (
                        {"t1", "t2"} - {mine.table}):
                    found.append((mine, other))
    return found


def _keyed(condition: str, right_delta: sql.Composable) -> sql.Composable:
    """` AND (left keys) IN (SELECT right keys FROM the right delta)`: the equalities of
    a semi or anti join's condition that has other conjuncts too, as a semi-join of
    their own. PostgreSQL turns an equality semi-join around (the delta's distinct keys
    probe the left history's index), but not one with another conjunct beside (TPC-H
    Q21's `l_suppkey <>`: it scanned 8,500 left rows for 7 changed line items). Implied
    by the condition: it changes no row."""
    keys, others = _key_pairs(condition)
    if not keys or not others:
        return sql.SQL("")
    return sql.SQL("\n       AND ({}) IN (SELECT {} FROM {} AS {})").format(
        sql.SQL(", ").join(sql.SQL(mine.sql(DIALECT)) for mine, _ in keys),
        sql.SQL(", ").join(sql.SQL(other.sql(DIALECT)) for _, other in keys), right_delta, T2)


def _key_pairs(condition: str) -> tuple[list[tuple[exp.Expression, exp.Expression]], int]:
    """The condition's equalities of a left column and an expression of right columns
    (which an index of the right history serves: network.builder makes one), and how
    many other conjuncts it has."""
    keys = [pair for pair in _equalities(condition) if pair[0].table == "t1"]
    return keys, len(conjuncts(tree_of(condition))) - len(keys)


def deferred(node: Node) -> bool:
    """A virtual join whose delta no consumer reads each cycle (only its query's changes
    view): no cycle computes it, its changes are computed when read (join/changes.sql).
    The layout keeps "deferred": false once a consumer needed them each cycle."""
    return bool(node.layout.get("deferred"))


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Neg)


def one_sided(node: Node, parents: list[Node]) -> dict[str, list[str]] | None:
    """The arithmetic of the join's condition (as its views run it) and columns, by the
    side (t1, t2) it reads: what may overflow on a row. None if some reads both sides:
    only pairs could show it fails, so the join is not deferred."""
    found: dict[str, list[str]] = {}
    for text in [join_condition(node, parents), *node.exprs]:
        for tree in tree_of(text).find_all(*_ARITHMETIC):
            if isinstance(tree.parent, _ARITHMETIC):
                continue  # within a larger one
            sides = {c.table for c in tree.find_all(exp.Column)}
            if len(sides) > 1:
                return None
            if sides:
                found.setdefault(sides.pop(), []).append(tree.sql(DIALECT))
    return found


def guards(node: Node, parents: list[Node], rows: str) -> list[tuple[Node, sql.Composed]]:
    """join/guard over each parent's `rows` ("delta" or "hist") that has arithmetic."""
    sides = one_sided(node, parents) or {}
    return [(parent, render("join/guard", alias=sql.Identifier(alias),
                            rows=parent.delta if rows == "delta" else parent.hist,
                            exprs=sql.SQL(", ").join(map(sql.SQL, sides[alias]))))
            for alias, parent in zip(("t1", "t2"), parents) if alias in sides]


def changes(node: Node) -> sql.Identifier:
    """What a query whose output is this join reads as its changes: its delta, or the
    view of it (join/changes.sql) if it was ever deferred."""
    return node.aux("changes") if "deferred" in node.layout else node.delta_table


def describe(node: Node) -> list[str]:
    spec = node.spec
    return [f"{spec.join_type} join on {spec.condition}"] + (
        [f"its rows expire by themselves: {expiry.bound(node).failed('row')}"]
        if expiry.expiring(node) else []) + (
        [f"indexed join keys: {', '.join('.'.join(i) for i in node.layout['indexes'])}"]
        if node.layout.get("indexes") else [])


def probe(node: Node, parents: list[Node]) -> list[Probe]:
    condition = join_condition(node, parents)
    return [Probe(T1, 0, list(node.exprs), 1, condition),
            Probe(T2, 1, list(node.exprs), 0, condition)]


_SYMBOLS = {"inner": "⋈", "left": "⟕", "semi": "⋉", "anti": "▷"}


def _inner(node: Node) -> bool:
    return node.spec.join_type == "inner"


KIND = register_kind(Kind(
    "join", JoinSpec.of, JoinCompiler(), describe, probe=probe, joins=True,
    inner_join=_inner, clock_driven=expiry.expiring, changes=changes,
    copies=lambda node, column: passed_on(node, column) if _inner(node) else None,
    shard_keys=lambda node: (node.columns if node.insert_only and _inner(node)
                             and not lazy.is_lazy(node) else ()),
    as_view="the join of its parents' histories (its answer is large next to them)",
    label=lambda node: f"{_SYMBOLS.get(node.spec.join_type, '⋈')} {node.spec.condition}"))
