"""SQL → plan: translate a qualified sqlglot tree (every column tied to its table alias,
stars expanded) into the plan tree of `argus.plan`.

The translation is the textbook one, kept small:
- FROM items become relations; WHERE and inner-join ON conditions are split into
  conjuncts; a conjunct on one relation is pushed below the joins (never below the
  nullable side of a LEFT JOIN); the others become join conditions as soon as the
  relations they mention are joined. Inner joins are ordered greedily so that each
  next relation is connected to the ones already joined (no needless cross products);
  n-way joins become cascades of 2-way joins.
- EXISTS / NOT EXISTS / IN (subquery) conjuncts become semi- and anti-joins.
- GROUP BY and aggregates become one Aggregate node; HAVING a selection above it.
- DISTINCT, UNION, INTERSECT, EXCEPT (and ALL) become counting nodes.
- Derived tables and WITH become sub-plans; a CTE used twice is one plan (one node).
Anything else is refused with an UnsupportedQueryError naming it.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from ..errors import QueryError, UnsupportedQueryError
from ..plan import Col, Distinct, Join, Plan, Recursive, Scan, Select, SetOp, Window
from . import recursive
from .grouping import aggregate, aggregate_calls
from .relations import (Conjunct, Rel, Result, aliases_of, bind, columns_of, conjunction,
                        figure_name, passthrough, short)
from .temporal import calls_user_clock
from ..trees import DIALECT, conjuncts


@dataclass
class Planner:
    streams: Mapping[str, object]  # name -> StreamSchema
    refs: Counter = field(default_factory=Counter)  # (alias, column) -> mentions left
    ctes: dict[str, exp.Expr] = field(default_factory=dict)
    cte_results: dict[str, Result] = field(default_factory=dict)
    user_aliases: set[str] = field(default_factory=set)
    _instances: itertools.count = field(default_factory=lambda: itertools.count(1))
    _tags: dict[str, str] = field(default_factory=dict)
    _planning: set[str] = field(default_factory=set)  # CTEs being planned (no cycles)

    # -- query expressions -----------------------------------------------------------

    def query(self, node: exp.Expr) -> Result:
        while isinstance(node, exp.Subquery):
            node = node.this
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            for cte in with_.expressions:
                self.ctes[cte.alias] = cte.this
            for cte in with_.expressions:
                if with_.args.get("recursive") and recursive.reads(cte.this, cte.alias):
                    self.cte_results[cte.alias] = self.recursive(cte)
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            return self.set_operation(node)
        if isinstance(node, exp.Select):
            return self.select(node)
        raise UnsupportedQueryError(f"{node.key.upper()} as a query")

    def set_operation(self, node: exp.Expr) -> Result:
        left, right = self.query(node.this), self.query(node.expression)
        if len(left.outputs) != len(right.outputs):
            raise QueryError(f"each {node.key.upper()} query must have the same number of "
                             f"columns ({len(left.outputs)} and {len(right.outputs)})")
        distinct = bool(node.args.get("distinct"))
        op = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(node)]
        lplan, rplan = self.materialize(left), self.materialize(right)
        if op == "union":
            plan: Plan = SetOp("union_all", lplan, rplan)
            if distinct:
                plan = Distinct(plan)
        else:
            plan = SetOp(op if distinct else f"{op}_all", lplan, rplan)
        outputs = [(name, exp.column(col, table="t1", quoted=True).sql(DIALECT))
                   for (name, _), col in zip(left.outputs, lplan.names)]
        return Result(plan, outputs)

    def recursive(self, cte: exp.CTE) -> Result:
        """A recursive CTE (argus.frontend.recursive): its non-recursive branches
        planned, its recursive one kept as SQL."""
        base, step = recursive.branches(cte)
        query = base[0]
        for more in base[1:]:
            query = exp.union(query, more, distinct=True)
        result = self.query(query)
        names = [c.name for c in cte.args["alias"].columns] if cte.args.get("alias") and \
            cte.args["alias"].columns else [n for n, _ in result.outputs]
        if len(names) != len(result.outputs) or len(step.expressions) != len(names):
            raise QueryError(f"each branch of {cte.alias} must have {len(names)} columns")
        text, values, streams, keys = recursive.step_text(cte.alias, step, set(self.streams))
        plan = Recursive(self.materialize(result), text, tuple(values), tuple(streams),
                         tuple(self._unique([short(n) for n in names])), tuple(keys))
        return Result(plan, [(n, exp.column(c, table="t1", quoted=True).sql(DIALECT))
                             for n, c in zip(names, plan.columns)])

    def materialize(self, result: Result) -> Plan:
        """A plan whose columns are exactly the result's outputs, in order."""
        names = self._unique([short(n) for n, _ in result.outputs])
        plain = [exp.column(c, table="t1", quoted=True).sql(DIALECT) for c in result.plan.names]
        if [e for _, e in result.outputs] == plain:
            return result.plan
        return Select(result.plan, None,
                      tuple(Col(n, e) for n, (_, e) in zip(names, result.outputs)))

    @staticmethod
    def _unique(names: list[str]) -> list[str]:
        seen: dict[str, int] = {}
        out = []
        for name in names:
            n = seen.get(name, 0)
            seen[name] = n + 1
            out.append(name if n == 0 else short(f"{name}_{n + 1}"))
        return out

    # -- SELECT ----------------------------------------------------------------------

    def select(self, sel: exp.Select) -> Result:
        distinct = sel.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            raise UnsupportedQueryError("DISTINCT ON")
        if sel.args.get("from_") is None:
            raise QueryError("the query reads no stream: every SELECT needs a FROM clause")
        rel, correlated = self.from_where(sel, outer=frozenset())
        assert not correlated

        projections = list(sel.expressions)
        names = [self._output_name(p) for p in projections]
        having = sel.args.get("having")
        group = sel.args.get("group")
        for part in projections + ([having] if having else []) + ([group] if group else []):
            self._refuse_nested_subqueries(part)
        calls = aggregate_calls(projections + ([having.this] if having else []))
        if group is not None or calls:
            if group is not None and (group.find(exp.Rollup, exp.Cube, exp.GroupingSets)
                                      or any(group.args.get(k) for k in
                                             ("rollup", "cube", "grouping_sets"))):
                raise UnsupportedQueryError("ROLLUP / CUBE / GROUPING SETS")
            keys = list(group.expressions) if group is not None else []
            rel, rewrite = aggregate(rel, keys, calls)
            projections = [rewrite(p) for p in projections]
            if having is not None:
                predicate = bind(rewrite(having.this), [rel])
                self.consume([having.this])
                rel = Rel(Select(rel.plan, predicate, self._identity(rel.plan)), rel.cols,
                          rel.aliases)
        elif having is not None:
            raise UnsupportedQueryError("HAVING without GROUP BY or aggregates")

        outputs = [(n, bind(self._unalias(p), [rel])) for n, p in zip(names, projections)]
        result = Result(rel.plan, outputs)
        if any(p.find(exp.Window) for p in projections):
            result = self.window(rel, projections, outputs)
        if distinct is not None:
            plan = Distinct(self.materialize(result))
            result = Result(plan, [(n, exp.column(c, table="t1", quoted=True).sql(DIALECT))
                                   for (n, _), c in zip(outputs, plan.names)])
        return result

    @staticmethod
    def window(rel: Rel, projections: list[exp.Expr], outputs: list[tuple[str, str]]
               ) -> Result:
        """The select list as one Window node over `rel`: its windows' common partition
        keys (none: the whole input is one partition) are columns of the node too."""
        keys: set[str] | None = None
        for window in (w for p in projections for w in p.find_all(exp.Window)):
            if window.find_ancestor(exp.Window) is not None:
                raise UnsupportedQueryError("window functions inside window functions")
            mine = {bind(e, [rel]) for e in window.args.get("partition_by") or []}
            keys = mine if keys is None else keys & mine
        plan = Window(rel.plan,
                      tuple(Col(f"argus_p{i}", k) for i, k in enumerate(sorted(keys or ()))),
                      tuple(Col(f"argus_w{j}", expr) for j, (_, expr) in enumerate(outputs)))
        return Result(plan, [(name, exp.column(f"argus_w{j}", table="t1",
                                               quoted=True).sql(DIALECT))
                             for j, (name, _) in enumerate(outputs)])

    @staticmethod
    def _identity(plan: Plan) -> tuple[Col, ...]:
        return tuple(Col(c, exp.column(c, table="t1", quoted=True).sql(DIALECT))
                     for c in plan.names)

    @staticmethod
    def _unalias(expr: exp.Expr) -> exp.Expr:
        return expr.this if isinstance(expr, exp.Alias) else expr

    def _output_name(self, projection: exp.Expr) -> str:
        if isinstance(projection, exp.Alias) and projection.alias in self.user_aliases:
            return projection.alias
        return figure_name(self._unalias(projection))

    # -- FROM and WHERE --------------------------------------------------------------

    def from_where(self, sel: exp.Select, outer: frozenset[str]) -> tuple[Rel, list[exp.Expr]]:
        """Plan FROM + WHERE. Conjuncts that mention `outer` aliases (a correlated
        subquery's link to the enclosing query) are returned, not applied."""
        items = self._from_items(sel)
        rels = [self.source(item) for _, item, _ in items]
        local = frozenset().union(*(r.aliases for r in rels))
        nullable: set[str] = set()
        for (side, _, _), rel in zip(items, rels):
            if side == "LEFT":
                nullable |= rel.aliases
        where = sel.args.get("where")
        pool, sublinks, correlated = self._where(where.this if where else None, outer, local)
        on_conditions: dict[int, list[exp.Expr]] = {}
        for i, (side, _, on) in enumerate(items):
            for c in conjuncts(on):
                self._refuse_nested_subqueries(c)
                if side == "INNER":
                    pool.append(Conjunct(c, aliases_of(c)))
                else:
                    on_conditions.setdefault(i, []).append(c)
        self._push_down(items, rels, pool, on_conditions, nullable)
        # an uncorrelated IN (subquery) over one relation's columns, below the joins
        for link in list(sublinks) if len(rels) > 1 else []:
            i = self._filtered_by(link, rels, nullable | outer)
            if i is not None:
                rels[i] = self.sublink(rels[i], link)
                sublinks.remove(link)
        current = self._left_deep(items, rels, pool, on_conditions)
        rest = [c.expr for c in pool if not c.used]
        if rest:
            current = self.filter(current, rest)
        for link in sublinks:
            current = self.sublink(current, link)
        return current, correlated

    @staticmethod
    def _from_items(sel: exp.Select) -> list[tuple[str | None, exp.Expr, exp.Expr | None]]:
        """(join side, relation, ON condition) of each FROM item, the first's side None."""
        items = [(None, sel.args["from_"].this, None)]
        for join in sel.args.get("joins") or []:
            # qualify() has already turned USING and NATURAL into ON conditions
            side = (join.side or "").upper()
            kind = (join.kind or "").upper()
            # argus.frontend.outer rewrote every RIGHT and FULL join it maintains
            assert side in ("", "LEFT", "INNER"), f"a {side} join reached the planner"
            if kind in ("SEMI", "ANTI") or kind == "LATERAL":
                raise UnsupportedQueryError(f"{kind} JOIN")
            items.append((side or "INNER", join.this, join.args.get("on")))
        return items

    def _where(self, where: exp.Expr | None, outer: frozenset[str], local: frozenset[str]
               ) -> tuple[list[Conjunct], list[exp.Expr], list[exp.Expr]]:
        """WHERE's conjuncts: those to apply, the subqueries (sublinks), and those
        correlated with the enclosing query."""
        pool: list[Conjunct] = []
        sublinks: list[exp.Expr] = []
        correlated: list[exp.Expr] = []
        for c in conjuncts(where):
            if self._is_sublink(c):
                sublinks.append(c)
            elif aliases_of(c) & outer:
                if aliases_of(c) - outer - local:
                    raise UnsupportedQueryError("subqueries correlated over more than one level")
                correlated.append(c)
            else:
                self._refuse_nested_subqueries(c)
                pool.append(Conjunct(c, aliases_of(c)))
        return pool, sublinks, correlated

    def _push_down(self, items, rels: list[Rel], pool: list[Conjunct],
                   on_conditions: dict[int, list[exp.Expr]], nullable: set[str]) -> None:
        """Single-relation conjuncts below the joins (not on a LEFT join's padded side,
        but a LEFT join's ON conditions on its right side alone)."""
        for i, rel in enumerate(rels):
            mine = [c for c in pool if not c.used and c.aliases and c.aliases <= rel.aliases
                    and not (c.aliases & nullable)]
            if items[i][0] == "LEFT":  # ON conditions on the right side alone
                here = [c for c in on_conditions.get(i, []) if aliases_of(c) <= rel.aliases]
                on_conditions[i] = [c for c in on_conditions.get(i, []) if c not in here]
                mine += [Conjunct(c, aliases_of(c)) for c in here]
            if mine:
                for c in mine:
                    c.used = True
                rels[i] = self.filter(rel, [c.expr for c in mine])

    def _left_deep(self, items, rels: list[Rel], pool: list[Conjunct],
                   on_conditions: dict[int, list[exp.Expr]]) -> Rel:
        """The relations joined left-deep, a connected inner relation first."""
        current = rels[0]
        pending = list(range(1, len(rels)))
        while pending:
            i = pending[0]
            if items[i][0] == "INNER":  # pick a connected inner relation first
                boundary = next((j for j in pending if items[j][0] == "LEFT"), None)
                candidates = [j for j in pending if boundary is None or j < boundary]
                for j in candidates:
                    if any(not c.used and c.aliases & rels[j].aliases
                           and c.aliases & current.aliases
                           and c.aliases <= current.aliases | rels[j].aliases for c in pool):
                        i = j
                        break
            pending.remove(i)
            right = rels[i]
            if items[i][0] == "LEFT":
                current = self.join(current, right, "left", on_conditions.get(i, []))
            else:
                usable = [c for c in pool if not c.used
                          and c.aliases <= current.aliases | right.aliases]
                for c in usable:
                    c.used = True
                current = self.join(current, right, "inner", [c.expr for c in usable])
        return current

    @staticmethod
    def _filtered_by(link: exp.Expr, rels: list[Rel], excluded: set[str]) -> int | None:
        """The relation an uncorrelated `x IN (subquery)` filters, when x reads that one
        relation alone (not a LEFT join's padded side): the semi join then runs below
        the joins. Its set is the subquery's answer, independent of the other relations
        (TPC-H Q18's few large orders), so it shrinks what every join above it keeps and
        probes; on top it would keep the whole join only to pass a few of its rows.
        Correlated EXISTS stay on top: their filters are often weaker than the joins'
        (TPC-H Q21)."""
        query = link.args.get("query") if isinstance(link, exp.In) else None
        if query is None:
            return None
        mine = aliases_of(link.this)
        local = frozenset().union(*(r.aliases for r in rels))
        if not mine or mine & excluded or aliases_of(query) & (local | excluded):
            return None
        return next((i for i, r in enumerate(rels) if mine <= r.aliases), None)

    @staticmethod
    def _is_sublink(c: exp.Expr) -> bool:
        inner = c.this if isinstance(c, exp.Not) else c
        return isinstance(inner, exp.Exists) or (
            isinstance(inner, exp.In) and inner.args.get("query") is not None)

    @staticmethod
    def _refuse_nested_subqueries(c: exp.Expr) -> None:
        if c.find(exp.Select) is not None:
            raise UnsupportedQueryError(
                "subqueries here", "maintained: subqueries in FROM, EXISTS and IN "
                "(subquery) anywhere (a row of values `(a, b) IN` only where AND and OR "
                "join it to the WHERE or HAVING), scalar subqueries of one aggregate")

    def source(self, item: exp.Expr) -> Rel:
        alias = item.alias_or_name
        if isinstance(item, exp.Subquery):
            result = self.query(item.this)
            return self._rel_of(result, alias)
        if isinstance(item, exp.Table):
            if item.args.get("db") or item.args.get("catalog"):
                raise QueryError(f"stream names are not schema-qualified: use {item.name}")
            if item.name in self.ctes:
                if item.name not in self.cte_results:
                    if item.name in self._planning:
                        raise UnsupportedQueryError(
                            f"WITH {item.name} reading itself through another WITH item, "
                            "or without RECURSIVE", "write WITH RECURSIVE, the relation "
                            "read by its own recursive branch only")
                    self._planning.add(item.name)
                    self.cte_results[item.name] = self.query(self.ctes[item.name])
                return self._rel_of(self.cte_results[item.name], alias)
            stream = self.streams.get(item.name)
            if stream is None:
                raise QueryError(f"unknown stream {item.name!r}")
            plan = Scan(stream.name, stream.column_names)
            return Rel(plan, {(alias, c): c for c in stream.column_names}, frozenset({alias}))
        raise UnsupportedQueryError(f"FROM {item.sql(DIALECT)}")

    def _rel_of(self, result: Result, alias: str) -> Rel:
        plan = self.materialize(result)
        return Rel(plan, {(alias, name): col for (name, _), col in zip(result.outputs, plan.names)},
                   frozenset({alias}))

    def consume(self, exprs: list[exp.Expr]) -> None:
        """The columns of `exprs` are used up: a node above needs them only if some other
        part of the query still mentions them (minimum column projection)."""
        for e in exprs:
            for c in columns_of(e):
                self.refs[(c.table, c.name)] -= 1

    @property
    def live(self) -> set[tuple[str, str]]:
        return {key for key, n in self.refs.items() if n > 0}

    def filter(self, rel: Rel, predicates: list[exp.Expr]) -> Rel:
        predicate = conjunction([bind(p, [rel]) for p in predicates])
        self.consume(predicates)
        # a temporal filter re-reads its own rows as the clock moves: keep its columns
        clock_columns = {(c.table, c.name) for p in predicates if calls_user_clock(p)
                         for c in columns_of(p)}
        kept = passthrough(rel, self.live | clock_columns)
        if not kept:  # a node needs at least one column
            key, plan_col = next(iter(rel.cols.items()))
            kept = [(key, Col(plan_col, exp.column(plan_col, table="t1", quoted=True)
                               .sql(DIALECT)))]
        plan = Select(rel.plan, predicate, tuple(c for _, c in kept))
        return Rel(plan, {key: c.name for key, c in kept}, rel.aliases, rel.nullable)

    def join(self, left: Rel, right: Rel, join_type: str, condition: list[exp.Expr]) -> Rel:
        text = conjunction([bind(c, [left, right]) for c in condition]) or "TRUE"
        self.consume(condition)
        columns, cols = [], {}
        sides = (left,) if join_type in ("semi", "anti") else (left, right)
        for i, rel in enumerate(sides, 1):
            for key, col in passthrough(rel, self.live, i):
                name = short(f"{self._tag(key[0])}_{key[1]}")
                columns.append(Col(name, col.expr))
                cols[key] = name
        if not columns:
            key, plan_col = next(iter(left.cols.items()))
            name = short(f"{self._tag(key[0])}_{key[1]}")
            columns.append(Col(name, exp.column(plan_col, table="t1", quoted=True).sql(DIALECT)))
            cols[key] = name
        plan = Join(left.plan, right.plan, join_type, text, tuple(columns))
        if join_type in ("semi", "anti"):
            return Rel(plan, cols, left.aliases, left.nullable)
        padded = right.aliases if join_type == "left" else frozenset()
        nullable = left.nullable | right.nullable | padded
        return Rel(plan, cols, left.aliases | right.aliases, nullable)

    def _tag(self, alias: str) -> str:
        """A short stable tag for a table alias in join column names (r1, r2, …)."""
        if alias not in self._tags:
            self._tags[alias] = f"r{len(self._tags) + 1}"
        return self._tags[alias]

    def sublink(self, outer: Rel, link: exp.Expr) -> Rel:
        negated = isinstance(link, exp.Not)
        inner = link.this if negated else link
        if isinstance(inner, exp.In):
            if negated:
                raise UnsupportedQueryError(  # (argus.frontend.scalar rewrites the others)
                    "NOT IN over a subquery that groups or aggregates")
            subquery = inner.args["query"]
            subquery = subquery.this if isinstance(subquery, exp.Subquery) else subquery
        else:
            subquery = inner.this
        if not isinstance(subquery, exp.Select):
            raise UnsupportedQueryError(
                "set operations inside EXISTS / IN", "correlated, maintained when every "
                "branch is correlated by equalities with the same outer columns")
        correlated_free = not (aliases_of(subquery) & outer.aliases)
        if correlated_free:
            result = self.query(subquery)
            sub = self._rel_of(result, f"argus_sub{next(self._instances)}")
            sub_outputs = [exp.column(name, table=next(iter(sub.aliases)), quoted=True)
                           for name, _ in result.outputs]
            correlation: list[exp.Expr] = []
        else:
            for arg in ("group", "having", "distinct", "with_"):
                if subquery.args.get(arg):
                    raise UnsupportedQueryError(
                        f"{arg.rstrip('_').upper()} in a correlated subquery")
            if aggregate_calls(list(subquery.expressions)):
                raise UnsupportedQueryError("aggregates in a correlated subquery")
            sub, correlation = self.from_where(subquery, outer=outer.aliases)
            sub_outputs = [self._unalias(e) for e in subquery.expressions]
        condition = list(correlation)
        if isinstance(inner, exp.In):
            if len(sub_outputs) != 1:
                raise QueryError("the subquery of IN must return exactly one column")
            condition.append(exp.EQ(this=inner.this.copy(), expression=sub_outputs[0].copy()))
        return self.join(outer, sub, "anti" if negated else "semi", condition)
