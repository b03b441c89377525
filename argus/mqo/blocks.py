"""Select-project-join blocks: what a plan's selections and inner joins compute, in the
terms the computation index matches on.

A block joins *instances* i1, i2, … of *sources* (a stream's node, or a node that is
not a selection or inner join: an aggregate, a left join, a temporal filter …) under a
set of conditions, and projects output columns. Conditions are kept as the user wrote
them (to run) and as canonical PredSets (to match); columns are instance atoms
`"i2"."amount"`. A node of the network is indexed with the block it computes, over its
own Standard Table Aliases; `matches` finds the assignments of a node's STAs to a
query's instances under which the node holds every row the query needs, and what is
left to filter (the residual). Pure: no database access.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from sqlglot import exp

from ..frontend.canon import (FLOATS, Clause, PredSet, Resolve, TypeOf, atom_instances,
                              canonicalize, clause_implies, column_atom, eliminate,
                              exact_atoms, implies, map_atom, map_clause)
from ..failures import never_fails
from ..frontend.lateral import expands
from ..frontend.relations import short
from ..plan import Join, Plan, Select
from ..frontend.temporal import reads_clock
from ..trees import DIALECT, conjuncts, tree_of



@dataclass(frozen=True)
class Cond:
    """One conjunct of a block's condition."""

    predset: PredSet  # canonical, for matching
    sql: exp.Expr  # as written, columns as instance atoms, for running
    instances: frozenset[int]


@dataclass(frozen=True)
class Block:
    sources: tuple[int, ...]  # instance k reads the node sources[k - 1]
    conds: tuple[Cond, ...]
    outputs: tuple[tuple[str, exp.Expr], ...]  # the plan's columns over instance atoms
    types: Mapping[str, str]  # column atom -> PostgreSQL type
    finite: frozenset[str] = frozenset()  # column atoms never ±infinity (a stream's time)

    @property
    def instances(self) -> frozenset[int]:
        return frozenset(range(1, len(self.sources) + 1))

    def within(self, subset: frozenset[int]) -> list[Cond]:
        return [c for c in self.conds if c.instances <= subset]

    def connected(self, subset: frozenset[int]) -> bool:
        """Are the instances of `subset` linked by conditions among themselves?"""
        if len(subset) <= 1:
            return True
        seen, todo = set(), [min(subset)]
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            for c in self.within(subset):
                if i in c.instances:
                    todo += list(c.instances - seen)
        return seen == set(subset)


def is_spj(plan: Plan) -> bool:
    """Selections (not temporal ones: they change with the clock; nor ones calling a
    set-returning function: they expand rows) and inner joins."""
    if isinstance(plan, Select):
        return not reads_clock(plan.predicate) and not any(
            expands(c.expr) for c in plan.columns)
    return isinstance(plan, Join) and plan.join_type == "inner"


Source = Callable[[Plan], tuple[int, Mapping[str, str], Mapping[str, str], frozenset[str]]]
# a source plan -> (its node id, plan column -> node column, node column -> type, the node
# columns whose dates and times are never infinite)


def describe(plan: Plan, source: Source, *, canonical: bool = True, infer: bool = True,
             resolve: Resolve | None = None) -> Block:
    """The block of a plan whose top is a selection or inner join (or any plan: then
    the block is that one source, unfiltered). `resolve`: how PostgreSQL reads its
    constants (canon.Resolve); `infer`: add the bounds its conditions imply."""
    sources: list[int] = []
    conds: list[Cond] = []
    types: dict[str, str] = {}
    finite: set[str] = set()

    def add_conds(condition: exp.Expr) -> None:
        for conjunct in _conjuncts(condition):
            conds.append(Cond(canonicalize(conjunct, types.get, enabled=canonical,
                                           resolve=resolve, finite=finite), conjunct,
                              instances_of(conjunct)))

    def walk(p: Plan) -> dict[str, exp.Expr]:
        if isinstance(p, Select) and is_spj(p):
            inputs = walk(p.input)
            if p.predicate:
                add_conds(substitute(p.predicate, {"t1": inputs}))
            return {c.name: substitute(c.expr, {"t1": inputs}) for c in p.columns}
        if isinstance(p, Join) and is_spj(p):
            left, right = walk(p.left), walk(p.right)
            add_conds(substitute(p.condition, {"t1": left, "t2": right}))
            return {c.name: substitute(c.expr, {"t1": left, "t2": right}) for c in p.columns}
        node_id, names, column_types, finite_columns = source(p)
        sources.append(node_id)
        k = len(sources)
        for column, pg_type in column_types.items():
            types[column_atom(k, column)] = pg_type
        finite.update(column_atom(k, column) for column in finite_columns)
        return {n: exp.column(names[n], table=f"i{k}", quoted=True) for n in p.names}

    outputs = walk(plan)
    if canonical and infer:
        conds += implied_bounds(conds, types.get)
    return Block(tuple(sources), tuple(conds), tuple((n, outputs[n]) for n in plan.names), types,
                 frozenset(finite))


def implied_bounds(conds: list[Cond], type_of: TypeOf, rounds: int = 3) -> list[Cond]:
    """The bounds on one column that the block's conditions imply (ARGUS's transitivity
    inference, Jin 2006 §5): `i1.amount > 1000000 AND i2.amount > i1.amount * 0.5 AND
    i3.amount = i2.amount` also bound `i2.amount > 500000` and `i3.amount > 500000`.
    Redundant for the answer (every row of it satisfies them), they filter instances
    before they are joined, so that their selections keep fewer rows, and sharing can
    reuse them. Only from conjuncts that are one comparison of columns of known types
    other than floats (PostgreSQL compares a numeric or a bigint with a float as the float
    it rounds to: x > 0.1 AND f >= x does not bound f > 0.1; found by a helper), and only
    what no bound already there implies; `rounds` bounds the chains followed (cycles of
    conditions would tighten forever)."""
    units = [lit for c in conds if len(c.predset) == 1 for clause in c.predset
             if len(clause) == 1 for lit in clause
             if all(type_of(atom) not in (*FLOATS, None) for atom, _ in lit.terms)]
    known = [lit for lit in units if len(lit.terms) == 1]
    links = [lit for lit in units if len(lit.terms) == 2]
    frontier, derived = list(known), []
    for _ in range(rounds):
        found = []
        for bound in frontier:
            ((atom, _),) = bound.terms
            for link in links:
                for lit in eliminate(bound, link, atom) if atom in dict(link.terms) else []:
                    if not any(implies(k, lit) for k in known):  # one atom: the other
                        known.append(lit)
                        found.append(lit)
        derived += found
        frontier = found
    return [Cond(frozenset({frozenset({lit})}), tree_of(lit.text),
                 lit.instances) for lit in derived]


def _conjuncts(e: exp.Expr) -> list[exp.Expr]:
    return [c for c in conjuncts(e) if not (isinstance(c, exp.Boolean) and c.this is True)]


# where an expression may stand for a column as it is: an operand of nothing that binds
_AS_IS = (exp.Paren, exp.Alias, exp.Tuple, exp.Where, exp.Having, exp.Select, exp.Group,
          exp.Order, exp.Ordered)


def substitute(sql_text: str, inputs: Mapping[str, Mapping[str, exp.Expr]]) -> exp.Expr:
    """Parse SQL over a node's inputs (t1, t2 …) and replace each input column by its
    expression over instance atoms, parenthesised where an operator applies to it
    (sqlglot writes a tree as it is: a derived table's `k - j AS d` under `-d > 0` was
    written `-k - j > 0`; found by a helper)."""
    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table in inputs:
            return _operand(inputs[node.table][node.name].copy(), node.parent)
        return node

    return tree_of(sql_text).transform(visit, copy=False)


def _operand(value: exp.Expr, parent: exp.Expr | None) -> exp.Expr:
    """`value` where a column stood under `parent`: in parentheses if an operator applies
    to it (a call's argument needs none: CAST(k - j AS int); COLLATE is an operator)."""
    atomic = isinstance(value, (exp.Column, exp.Literal, exp.Paren, exp.Null, exp.Boolean))
    called = isinstance(parent, exp.Func) and not isinstance(parent, exp.Binary)
    if atomic or called or parent is None or isinstance(parent, _AS_IS):
        return value
    return exp.Paren(this=value)


def instances_of(e: exp.Expr) -> frozenset[int]:
    return frozenset(int(c.table[1:]) for c in e.find_all(exp.Column)
                     if c.table.startswith("i") and c.table[1:].isdigit())


def equality(e: exp.Expr) -> bool:
    """An equality of two instances' expressions: a join an index can probe."""
    if not isinstance(e, exp.EQ):
        return False
    left, right = instances_of(e.left), instances_of(e.right)
    return len(left) == len(right) == 1 and left != right


def atoms_of(e: exp.Expr) -> set[str]:
    """The instance column atoms an expression reads."""
    return {column_atom(int(c.table[1:]), c.name) for c in e.find_all(exp.Column)
            if c.table.startswith("i") and c.table[1:].isdigit()}


def render(e: exp.Expr, columns: Mapping[str, tuple[str, str]]) -> str:
    """SQL of an expression over instance atoms, each atom replaced by (alias, column)
    of the node that evaluates it."""
    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table.startswith("i"):
            alias, name = columns[node.sql(DIALECT)]
            return exp.column(name, table=alias, quoted=True)
        return node

    return e.transform(visit).sql(DIALECT, copy=False)


def rename_instances(e: exp.Expr, mapping: Mapping[int, int]) -> exp.Expr:
    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table.startswith("i") \
                and node.table[1:].isdigit():
            return exp.column(node.name, table=f"i{mapping[int(node.table[1:])]}", quoted=True)
        return node

    return e.transform(visit)


# -- matching a node's block against a query's ------------------------------------------

@dataclass(frozen=True)
class Indexed:
    """A node as the computation index records it."""

    node_id: int
    sources: tuple[int, ...]  # in the node's STA order
    predset: PredSet  # over the node's STAs
    columns: Mapping[str, str]  # canonical atom (over the node's STAs) -> node column
    rows: int

    @property
    def may_fail(self) -> bool:
        """Whether its conditions may fail on a row (a division, a cast), but by an
        overflow of +, - or * (`tran_date + 20` at the last date PostgreSQL has: every
        band join's window would be kept to itself)."""
        return not all(never_fails(lit.text, overflow=True)
                       for clause in self.predset for lit in clause)


@dataclass(frozen=True)
class Match:
    node: Indexed
    mapping: Mapping[int, int]  # node STA -> query instance
    residual: tuple[Cond, ...]  # the query's conditions the node does not guarantee


# Assignments of nodes' STAs to a query's instances tried for one block, over every
# node and subset: a self-join of n copies has n! each (a registrar's 10-way self-join
# planned for minutes, holding the cycle lock, where statement_timeout cannot reach; a
# helper). Past it, no more nodes are offered: the query computes the rest itself.
MAX_ASSIGNMENTS = 10_000


class Budget:
    """What is left of a block's MAX_ASSIGNMENTS."""

    def __init__(self, left: int | None = None) -> None:
        self.left = MAX_ASSIGNMENTS if left is None else left

    def spend(self) -> bool:
        self.left -= 1
        return self.left >= 0


def matches(node: Indexed, block: Block, subset: frozenset[int],
            budget: Budget | None = None) -> Iterator[Match]:
    """Every assignment of the node's STAs to the instances of `subset` under which the
    node's PredSet is implied by the query's conditions on `subset`, while `budget`
    lasts."""
    budget = budget or Budget()
    if len(node.sources) != len(subset):
        return
    query_clauses = [c for cond in block.within(subset) for c in cond.predset]
    node_clauses = [(clause, _stas(clause)) for clause in node.predset]
    order = sorted(subset)

    exact = exact_atoms(block.types.get, block.finite)

    def implied(clause: Clause, mapping: dict[int, int]) -> bool:
        mapped = map_clause(clause, mapping)
        return any(clause_implies(q, mapped, exact) for q in query_clauses)

    def assign(j: int, mapping: dict[int, int]) -> Iterator[dict[int, int]]:
        if j > len(node.sources):
            yield dict(mapping)
            return
        for q in order:
            if q in mapping.values() or block.sources[q - 1] != node.sources[j - 1]:
                continue
            if not budget.spend():
                return
            mapping[j] = q
            if all(implied(c, mapping) for c, stas in node_clauses
                   if j in stas and stas <= mapping.keys()):
                yield from assign(j + 1, mapping)
            del mapping[j]

    # clauses over no instance (constants) are checked once, up front
    if not all(implied(c, {}) for c, stas in node_clauses if not stas):
        return
    for mapping in assign(1, {}):
        guaranteed = [map_clause(c, mapping) for c in node.predset]
        residual = tuple(cond for cond in block.within(subset)
                         if not all(any(clause_implies(g, c, exact) for g in guaranteed)
                                    for c in cond.predset))
        yield Match(node, mapping, residual)


def _stas(clause: Clause) -> frozenset[int]:
    return frozenset(i for lit in clause for atom, _ in lit.terms for i in atom_instances(atom))


def connected_subsets(block: Block, size: int) -> list[frozenset[int]]:
    return [frozenset(s) for s in itertools.combinations(sorted(block.instances), size)
            if block.connected(frozenset(s))]


def fresh_name(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = short(f"{name}_{n}")
    taken.add(candidate)
    return candidate


def column_name(atom: str, width: int) -> str:
    """A node column's name from its atom: the source column in a one-source node,
    t<STA>_<column> in a join."""
    column = tree_of(atom)
    if width == 1:
        return short(column.name)
    return short(f"t{column.table[1:]}_{column.name}")


def source_atoms(columns) -> dict[str, str]:
    """atom -> column of a source node (STA 1)."""
    return {column_atom(1, c): c for c in columns}


def enrichment(atoms: set[str], width: int | None) -> list[tuple[str, int, str]]:
    """Where each atom (over a node's STAs) a node gains comes from: (atom, the parent
    holding it, 1 or 2, the atom over that parent's STAs). `width`: a join's left
    parent's sources (None: a selection, whose one parent holds them all)."""
    plan = []
    for atom in sorted(atoms):
        k = int(atom.split(".", 1)[0].strip('"')[1:])
        side = 1 if width is None or k <= width else 2
        plan.append((atom, side, atom if side == 1 else map_atom(atom, {k: k - width})))
    return plan


def enriched_parents(plan, parents: list, atoms_of_node, enrich) -> list:
    """The parents, each enriched first with the atoms of `plan` it lacks."""
    parents = list(parents)
    for side in sorted({side for _, side, _ in plan}):
        missing = {a for _, s, a in plan if s == side} - set(atoms_of_node(parents[side - 1]))
        if missing:
            parents[side - 1] = enrich(parents[side - 1], missing)
    return parents


def enriched_columns(node, parents, plan, atoms_of_node, width: int
                     ) -> list[tuple[str, str, str, str]]:
    """The columns a node gains for `plan` (enrichment's), once its parents hold them:
    (name, expression over t1/t2, type, atom). `atoms_of_node`: a node's atom -> column;
    `width`: the node's sources."""
    taken, added = set(node.columns), []
    for atom, side, parent_atom in plan:
        parent = parents[side - 1]
        column = atoms_of_node(parent)[parent_atom]
        name = fresh_name(column_name(atom, width), taken)
        pg_type = dict(zip(parent.columns, parent.types))[column]
        added.append((name, exp.column(column, table=f"t{side}", quoted=True).sql(DIALECT),
                      pg_type, atom))
    return added

