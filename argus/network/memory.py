"""A network in memory: what the multi-query optimizer asks of a network
(mqo.protocol.Network), answered from dicts and a model of the rows instead of the
catalog and PostgreSQL's estimates, so that selection-join blocks are planned without a
server (issue 55; tests/test_sharing_offline.py plans tests/fixtures/sharing.txt so).
Its nodes are described as the Builder describes them, and never written. Each source
holds the rows it is given, of which a condition passes the share its model says
(network.row_model.SampleModel, or a test's server: then the two plan over the same
numbers)."""

from __future__ import annotations

import dataclasses
import re

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

from ..mqo import order
from ..mqo.blocks import (Block, Indexed, enriched_columns, enriched_parents, enrichment,
                          source_atoms)
from ..mqo.memory_index import Entry, MemoryIndex
from ..mqo.order import Estimates
from ..mqo.sharing import IndexEntry, Sharing
from ..nodes import KINDS, Node, signature
from ..plan import Col
from .apply import SEQUENCE_GAP
from .layout_policy import LayoutPolicy, may_be_view
from .mapping import Mapping
from .reshape import growing
from .row_model import SampleModel
from ..trees import DIALECT, tree_of


class MemoryGroups:
    """regroup.Groups in memory: each aggregate's input, group expressions and whether
    it is regrouped; `sizes`: its groups (an input's: its rows), set as it is recorded
    by `size_of(input, expressions)` where given; no node `withheld` says is offered."""

    def __init__(self, size_of=None, withheld=lambda node_id: False) -> None:
        self.topology: dict[int, tuple[int, list[str], bool]] = {}
        self.sizes: dict[int, int] = {}
        self.size_of = size_of
        self.withheld = withheld  # (MemoryNetwork's: made for the query, or another's)

    def exprs(self, node_id):
        return list(self.topology[node_id][1])

    def rerolled(self, node_id):
        return self.topology[node_id][2]

    def rows(self, node_id):
        return self.sizes.get(node_id, 0)

    def covering(self, input_id, exprs):
        found = [n for n, (i, mine, _) in self.topology.items()
                 if i == input_id and set(exprs) <= set(mine) and not self.withheld(n)]
        return sorted(found, key=lambda n: (self.rows(n), n))

    def coarser(self, input_id, than, width):
        return [n for n, (i, mine, rerolled) in self.topology.items()
                if i == input_id and not rerolled and n != than and len(mine) < width
                and not self.withheld(n)]

    def record(self, node_id, input_id, exprs, rerolled):
        self.topology.setdefault(node_id, (input_id, list(exprs), rerolled))
        if self.size_of is not None and node_id not in self.sizes:
            self.sizes[node_id] = self.size_of(input_id, exprs)

    def reroll(self, node_id):
        input_id, exprs, _ = self.topology[node_id]
        self.topology[node_id] = (input_id, exprs, True)


# settings.virtual_selectivity's and virtual_join_growth's defaults (not imported: the
# settings module needs the driver; tests/test_layers checks they are equal)
VIRTUAL_SELECTIVITY, VIRTUAL_JOIN_GROWTH = 0.3, 4


class MemoryNetwork(Mapping, LayoutPolicy):
    """Nodes by id, the computation index, the aggregates' groups, each source's rows;
    plans mapped to nodes as network.mapping maps them."""

    replan = None  # (a registered query planned again needs the cycles' measurements)
    constants = None  # (constants are not asked of PostgreSQL)

    def __init__(self, sharing: Sharing, layout: str = "cost",
                 samples: dict[str, list[dict]] | None = None, model=None,
                 virtual_selectivity: float | None = VIRTUAL_SELECTIVITY,
                 virtual_join_growth: float | None = VIRTUAL_JOIN_GROWTH) -> None:
        self.sharing, self.layout, self.query = sharing, layout, ""
        self.virtual_selectivity = virtual_selectivity
        self.virtual_join_growth = virtual_join_growth
        self.nodes: dict[int, Node] = {}
        self.index = MemoryIndex()
        self.blocks: dict[int, tuple[tuple[int, ...], dict[str, str]]] = {}  # sources, atoms
        self.signatures: dict[tuple[str, str | None], int] = {}  # (signature, private_to)
        self.created_by: dict[int, str] = {}  # node -> the query it was made for
        self.private: dict[int, str] = {}  # node -> the one query that may read it
        self.samples = samples or {}  # stream -> rows (column -> value)
        # what the rows are taken to be: a sample's (row_model.SampleModel), or any
        # object with its five methods (a test's: the server's own estimates and counts)
        self.model = model or SampleModel(self.samples)
        self.streams: dict[str, int] = {}  # name -> node
        self.times: dict[int, frozenset[str]] = {}  # source -> its time column
        # the nodes made for the query being planned: none is offered to it again, as
        # the catalog's argus.excluded_nodes offers none a registration made
        self.fresh: set[int] = set()
        self.groups = MemoryGroups(self._groups_of, self._withheld)
        self.names: dict = {}  # (network.mapping's)
        self._memo: dict = {}
        self.join_orders: list[dict] = []
        self.unions: dict[int, tuple[str, list[str]]] = {}  # node -> (op, operands)

    def _withheld(self, node_id: int) -> bool:
        """Not offered to the query planned: made for it (as the catalog offers no node
        a registration made), or private to another."""
        return node_id in self.fresh or self.private.get(node_id, self.query) != self.query

    # -- the network -------------------------------------------------------------------

    def add_stream(self, name: str, columns: dict[str, str], rows: int,
                   time_column: str | None = None) -> Node:
        node = Node(len(self.nodes) + 1, "stream", 0, 0, (), tuple(columns), tuple(columns),
                    ("argus_streams", name), {"stream": name}, types=tuple(columns.values()))
        self.nodes[node.id], self.streams[name] = node, node.id
        self.groups.sizes[node.id] = rows  # (a source's rows: regrouping reads them too)
        self.times[node.id] = frozenset([time_column] if time_column else [])
        return node

    def plan(self, query: str, plan) -> Node:
        """A query's plan (its input: network.mapping's) mapped to nodes for `query`."""
        self.query, self.names, self._memo = query, {}, {}
        self.fresh.clear()
        return self.node_for(plan)

    def load(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def ancestors(self, node_id: int) -> list[tuple[int, str]]:
        seen, todo = set(), [node_id]
        while todo:
            if (n := todo.pop()) not in seen:
                seen.add(n)
                todo += self.nodes[n].parents
        found = sorted((self.nodes[n] for n in seen),
                       key=lambda n: (n.join_level, n.sequence_id, n.id))
        return [(n.id, n.kind) for n in found]

    # -- what the optimizer reads --------------------------------------------------------

    def source_rows(self, node_id: int) -> float:
        """A node's rows: an indexed block's or an aggregate's as modelled when it was
        made, a source's as given, any other node's its first parent's."""
        if node_id in self.index.entries:
            return self.index.entries[node_id].indexed.rows
        if node_id in self.groups.sizes:
            return self.groups.sizes[node_id]
        return self.source_rows(self.nodes[node_id].parents[0])

    def estimate(self, source_id: int, instance: int, conds) -> float:
        return self.model.estimate(self, source_id, instance, conds)

    def estimates(self, block: Block) -> Estimates | None:
        if self.layout != "cost":
            return None
        return order.block_estimates(
            block, self.estimate, lambda source, rows: self.model.inflow(self, source, rows),
            lambda linked, conds: self.model.joined(self, block, linked, conds))

    def observed(self, node_id: int) -> float | None:
        return None  # (no cycle has run)

    def recent_share(self, source_id: int, instance: int, conds) -> float | None:
        return None

    def turned_over(self, node_id: int) -> tuple[float, float] | None:
        return None

    def recent_link(self, block, linked, conds, rows) -> float | None:
        return None

    def estimated(self, node: Node, rows: float, rate: float, inflow) -> None:
        pass

    def candidates(self, sources, shapes) -> list[Indexed]:
        return [c for c in self.index.candidates(sources, shapes, query=self.query)
                if c.node_id not in self.fresh]

    def source_index(self, node: Node) -> Indexed:
        return Indexed(node.id, (node.id,), frozenset(), source_atoms(node.columns),
                       int(self.source_rows(node.id)))

    def sources_of(self, node: Node) -> list[int]:
        return list(self.blocks[node.id][0]) if node.id in self.blocks else [node.id]

    def atoms(self, node: Node) -> dict[str, str]:
        return dict(self.blocks[node.id][1]) if node.id in self.blocks \
            else source_atoms(node.columns)

    def column(self, node: Node, atom: str) -> str:
        return self.atoms(node)[atom]

    # -- what the mapping asks ------------------------------------------------------------

    def check_horizon(self, parent: Node, bounds) -> None:
        pass  # (nothing is purged in memory)

    def _stream_node(self, stream: str) -> Node:
        return self.nodes[self.streams[stream]]

    def time_columns(self, source: Node) -> frozenset[str]:
        return self.times.get(source.id, frozenset())

    def probe_types(self, parent: Node, exprs: list[str]) -> list[str]:
        """Each expression's type without its modifier (as pg_typeof says it)."""
        return [re.sub(r"\(.*\)", "", self._type_of(e, [parent])) for e in exprs]

    def _index_parent(self, *_) -> None:
        pass  # (indexes are the catalog's network's)

    _index_join_keys = _record_indexes = _top_index = _index_parent

    def unions_within(self, keys: list[str]) -> list[tuple[int, list[str]]]:
        found = [(n, operands) for n, (op, operands) in self.unions.items()
                 if op == "union_all" and set(operands) <= set(keys) and n not in self.fresh]
        return sorted(found, key=lambda f: (-len(f[1]), -self.groups.rows(f[0]), f[0]))

    def record_union(self, node_id: int, op: str, operands: list[str]) -> None:
        self.unions.setdefault(node_id, (op, operands))

    def _groups_of(self, input_id: int, exprs: list[str]) -> int:
        """An aggregate's groups: the distinct values of its group columns in the
        sample of its input's stream, else a tenth of its input's rows."""
        node = self.nodes[input_id]
        columns = [re.fullmatch(r'"t1"\."([^"]+)"', e) for e in exprs]
        sample = self.samples.get(node.hist_ref[1]) if node.loaded else None
        if sample and all(columns):
            return len({tuple(row[c.group(1)] for c in columns) for row in sample})
        return max(int(self.groups.rows(input_id) / 10), 1)

    # -- what it makes -------------------------------------------------------------------

    def make_select(self, parent: Node, predicate: str | None, columns: list[Col],
                    entry: IndexEntry) -> Node:
        return self.ensure("select", [parent], columns, {"predicate": predicate},
                           parent.insert_only, entry)

    def make_join(self, left: Node, right: Node, condition: str, columns: list[Col],
                  entry: IndexEntry, copy=None, table: bool = False) -> Node:
        return self.ensure("join", [left, right], columns,
                           {"join_type": "inner", "condition": condition},
                           left.insert_only and right.insert_only, entry,
                           private=not self.sharing.join_sharing)

    def enrich(self, node: Node, atoms: set[str]) -> Node:
        """Projection enrichment, as network.reshape.enrich plans it."""
        atoms = atoms - set(self.atoms(node))
        if not atoms:
            return node
        parents = [self.nodes[p] for p in node.parents]
        plan = enrichment(atoms, len(self.sources_of(parents[0])) if len(parents) > 1
                          else None)
        parents = enriched_parents(plan, parents, self.atoms, self.enrich)
        added = enriched_columns(node, parents, plan, self.atoms, len(self.sources_of(node)))
        node = dataclasses.replace(node, columns=node.columns + tuple(a[0] for a in added),
                                   exprs=node.exprs + tuple(a[1] for a in added),
                                   types=node.types + tuple(a[2] for a in added))
        sources, atoms_now = self.blocks[node.id]
        self.blocks[node.id] = (sources, {**atoms_now, **{a[3]: a[0] for a in added}})
        entry = self.index.entries[node.id]
        self.index.record(dataclasses.replace(entry, indexed=Indexed(
            node.id, sources, entry.indexed.predset, self.blocks[node.id][1],
            entry.indexed.rows)))
        self.nodes[node.id] = node
        return node

    def ensure(self, kind: str, parents: list[Node], columns, definition: dict,
               insert_only: bool, entry: IndexEntry | None = None, private: bool = False,
               copy=None, table: bool = False, layout: dict | None = None) -> Node:
        """An equal node (by signature), else a new one (an indexed block's recorded in
        the index), as network.builder.Builder.ensure finds and describes it."""
        names, exprs = tuple(c.name for c in columns), tuple(c.expr for c in columns)
        of, layout = KINDS[kind], dict(layout or {})
        if of.selects and self.views_kept_rows(parents, definition, exprs):
            layout["virtual"] = True
        found = (signature(kind, parents, names, exprs, definition), self._private_to(private))
        # (one made for this query is not offered, as the catalog's isolated nodes: an
        # equal one is made beside it, and found from now on)
        if found in self.signatures and self.signatures[found] not in self.fresh:
            return self.nodes[self.signatures[found]]
        if of.groups:
            layout |= growing(definition, parents[0])
        rows = None if entry is None else self.model.counted(self, entry.sources, entry.predset)
        if of.selects and self.view_of_stream(parents[0], definition, layout, exprs, rows) \
                or of.joins and insert_only and self._grown(parents, definition, exprs, rows):
            layout["virtual"] = True
        node_id = len(self.nodes) + 1
        node = Node(node_id, kind, max(p.join_level for p in parents) + (len(parents) > 1),
                    max(p.sequence_id for p in parents) + SEQUENCE_GAP,
                    tuple(p.id for p in parents), names, exprs, ("argus_net", f"n{node_id}"),
                    definition, layout=layout, insert_only=insert_only,
                    types=tuple(self._type_of(e, parents, definition) for e in exprs))
        self.nodes[node_id], self.signatures[found] = node, node_id
        self.created_by[node_id] = self.query
        if found[1] is not None:
            self.private[node_id] = found[1]
        self.fresh.add(node_id)
        if entry is not None:
            atoms = {atom: name for name, atom in entry.atoms.items()}
            self.blocks[node_id] = (entry.sources, atoms)
            self.index.record(Entry(Indexed(node_id, entry.sources, entry.predset, atoms,
                                            int(rows)), private_to=found[1]))
        return node

    # -- how it keeps them (layout_policy's hooks) -----------------------------------------

    def _layout(self) -> tuple[str, float | None, None, None]:
        return self.layout, self.virtual_selectivity, None, None

    def share_of(self, parent: Node, predicate: str | None, base: Node,
                 rows: float | None = None) -> float:
        return self.model.share_of(self, parent, predicate, base, rows)

    def _grown(self, parents: list[Node], definition: dict, exprs, rows: float | None
               ) -> bool:
        """A join holding more than settings.virtual_join_growth times its inputs' rows
        is a view (the catalog's network finds it so by filling it up to that limit:
        Layouts._view_of_join)."""
        return rows is not None and self.layout == "cost" \
            and self.virtual_join_growth is not None \
            and may_be_view(definition, exprs, parents) \
            and rows > self.virtual_join_growth * sum(self.source_rows(p.id) for p in parents)

    def _expands_cleanly(self, *_) -> bool:
        return True  # (a sample's set-returning calls are not evaluated here)

    def restructure(self, node: Node, definition: dict, columns: list[Col],
                    new_parent: Node | None = None) -> Node:
        """An aggregate changed in place, as network.reshape.restructure changes it."""
        parent = new_parent or self.nodes[node.parents[0]]
        layout = {k: v for k, v in node.layout.items()
                  if k not in ("grows", "counted", "outward")} | growing(definition, parent)
        if new_parent is not None:  # (after its new parent: network.records.reparent)
            node = dataclasses.replace(node, join_level=parent.join_level,
                                       sequence_id=parent.sequence_id + SEQUENCE_GAP)
        node = dataclasses.replace(node, parents=(parent.id,), definition=definition,
                                   layout=layout, columns=tuple(c.name for c in columns),
                                   exprs=tuple(c.expr for c in columns),
                                   types=tuple(self._type_of(c.expr, [parent])
                                               for c in columns))
        self.nodes[node.id] = node
        return node

    def _type_of(self, expr: str, parents: list[Node], definition: dict | None = None
                 ) -> str:
        """A column's type as PostgreSQL types it: a parent's column's (a set
        operation's "t1.2 | t2.2", its sides' second columns, by the definition's names,
        where they agree; a recursive relation's, its anchor's);
        an aggregate's of its argument (count: bigint; min, max: the argument's; sum:
        bigint of integers, a float of floats, else numeric; avg and the moments:
        numeric, or double precision of floats; bool_and, bool_or: boolean); else as
        sqlglot types it (an argument over an aggregate's own input: a regrouped
        aggregate's), or unknown."""
        typed = self._typed(parents)
        if expr in typed:
            return typed[expr]
        if recursive := re.fullmatch(r"argus_recursive_(\d+)", expr):  # (its anchor's)
            return parents[0].types[int(recursive.group(1))]
        if definition and (position := re.fullmatch(r"t1\.(\d+) \| t2\.\1", expr)):
            i = int(position.group(1)) - 1
            found = {dict(zip(p.columns, p.types))[definition[side][i]]
                     for p, side in zip(parents, ("left", "right"))}
            return found.pop() if len(found) == 1 else "unknown"
        tree = tree_of(expr)
        if isinstance(tree, exp.Count):
            return "bigint"
        if isinstance(tree, (exp.LogicalAnd, exp.LogicalOr)):
            return "boolean"
        if not isinstance(tree, (exp.Min, exp.Max, exp.Sum, *_MEANS)):
            return _annotated(tree, typed)
        arg = typed.get(tree.this.sql(DIALECT)) or _annotated(tree.this, typed)
        if isinstance(tree, (exp.Min, exp.Max)) or arg == "unknown":
            return arg
        if arg in ("real", "double precision"):
            return arg if isinstance(tree, exp.Sum) else "double precision"
        return "bigint" if isinstance(tree, exp.Sum) and arg in ("smallint", "integer") \
            else "numeric"

    def _typed(self, parents: list[Node]) -> dict[str, str]:
        """The parents' columns' types, and under an aggregate its input's (a coarser
        aggregate over it names its arguments over that input)."""
        typed = {}
        for k, parent in enumerate(parents, 1):
            under = parent
            while under.kind_of.groups:
                under = self.nodes[under.parents[0]]
                typed = _column_types([under], k) | typed
            typed |= _column_types([parent], k)
        return typed


def _annotated(tree: exp.Expr, typed: dict[str, str]) -> str:
    """sqlglot's type of an expression over typed columns, as PostgreSQL names it."""
    schema: dict[str, dict[str, str]] = {}
    for column, pg_type in typed.items():
        table, name = (part.strip('"') for part in column.split(".", 1))
        schema.setdefault(table, {})[name] = pg_type
    select = exp.select(tree.copy())
    for k, table in enumerate(schema):
        select = select.join(table) if k else select.from_(table)
    try:
        found = annotate_types(select, schema=schema, dialect=DIALECT).expressions[0].type
    except Exception:  # (sqlglot types what it knows)
        return "unknown"
    name = found.sql(DIALECT).lower() if found else "unknown"
    name = {"int": "integer", "decimal": "numeric"}.get(name, name)
    return name if name in _NAMED else "unknown"


_NAMED = frozenset({"smallint", "bigint", "real", "double precision", "text", "boolean",
                    "date", "numeric", "integer"})
_MEANS = (exp.Avg, exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance,
          exp.VariancePop)


def _column_types(parents: list[Node], first: int = 1) -> dict[str, str]:
    """Each parent column, as an expression over t1, t2 … names it -> its type."""
    return {exp.column(c, table=f"t{k}", quoted=True).sql(DIALECT): t
            for k, p in enumerate(parents, first) for c, t in zip(p.columns, p.types)}
