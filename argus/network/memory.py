"""A network in memory: what the multi-query optimizer asks of a network
(mqo.sharing.Network), answered from dicts and a model of the rows instead of the
catalog and PostgreSQL's estimates, so that selection-join blocks are planned without a
server (issue 55; tests/test_sharing_offline.py plans tests/fixtures/sharing.txt so).
Its nodes are described as the Builder describes them, and never written. Each source
holds the rows it is given, of which a condition passes the share network.row_model
says."""

from __future__ import annotations

import dataclasses
import math

from ..mqo import order
from ..mqo.blocks import (Block, Indexed, enriched_columns, enriched_parents, enrichment,
                          source_atoms)
from ..mqo.memory_index import Entry, MemoryIndex
from ..mqo.order import Estimates
from ..mqo.sharing import IndexEntry, Sharing
from ..nodes import Node, signature
from ..plan import Col
from .apply import SEQUENCE_GAP
from .row_model import sampled, share


class MemoryNetwork:
    """Nodes by id, the computation index, and each source's rows."""

    replan = None  # (a registered query planned again needs the cycles' measurements)

    def __init__(self, sharing: Sharing, layout: str = "cost",
                 samples: dict[str, list[dict]] | None = None) -> None:
        self.sharing, self.layout, self.query = sharing, layout, ""
        self.nodes: dict[int, Node] = {}
        self.rows: dict[int, float] = {}  # source -> its rows
        self.index = MemoryIndex()
        self.blocks: dict[int, tuple[tuple[int, ...], dict[str, str]]] = {}  # sources, atoms
        self.signatures: dict[str, int] = {}
        self.created_by: dict[int, str] = {}  # node -> the query it was made for
        self.samples = samples or {}  # stream -> rows (column -> value)
        self._shares: dict[tuple, float] = {}

    # -- the network -------------------------------------------------------------------

    def add_stream(self, name: str, columns: dict[str, str], rows: int) -> Node:
        node = Node(len(self.nodes) + 1, "stream", 0, 0, (), tuple(columns), tuple(columns),
                    ("argus_streams", name), {"stream": name}, types=tuple(columns.values()))
        self.nodes[node.id], self.rows[node.id] = node, float(rows)
        return node

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

    def _share(self, sources: dict[int, int], clauses) -> float:
        """The share of the rows of instances (instance -> source) the clauses pass."""
        clauses = frozenset(clauses)
        key = (frozenset(sources.items()), clauses)
        if key not in self._shares:
            samples = {i: self.samples.get(self.nodes[s].hist_ref[1])
                       for i, s in sources.items()}
            found = sampled(clauses, samples) if clauses and all(samples.values()) else None
            self._shares[key] = share(clauses) if found is None else found
        return self._shares[key]

    def estimate(self, source_id: int, instance: int, conds) -> float:
        return self.rows[source_id] * self._share(
            {instance: source_id}, (c for cond in conds for c in cond.predset))

    def estimates(self, block: Block) -> Estimates | None:
        if self.layout != "cost":
            return None

        def joined(linked: frozenset[int], conds) -> float:
            linking = [c for cond in conds if len(cond.instances) > 1 for c in cond.predset]
            return math.prod(self.estimate(block.sources[i - 1], i,
                                           block.within(frozenset({i}))) for i in linked) \
                * self._share({i: block.sources[i - 1] for i in linked}, linking)

        return order.block_estimates(block, self.estimate, lambda _, rows: 0.01 * rows,
                                     joined)

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
        return self.index.candidates(sources, shapes)

    def source_index(self, node: Node) -> Indexed:
        return Indexed(node.id, (node.id,), frozenset(), source_atoms(node.columns),
                       int(self.rows[node.id]))

    def sources_of(self, node: Node) -> list[int]:
        return list(self.blocks[node.id][0]) if node.id in self.blocks else [node.id]

    def atoms(self, node: Node) -> dict[str, str]:
        return dict(self.blocks[node.id][1]) if node.id in self.blocks \
            else source_atoms(node.columns)

    def column(self, node: Node, atom: str) -> str:
        return self.atoms(node)[atom]

    # -- what it makes -------------------------------------------------------------------

    def make_select(self, parent: Node, predicate: str | None, columns: list[Col],
                    entry: IndexEntry) -> Node:
        return self._ensure("select", [parent], columns, {"predicate": predicate}, entry)

    def make_join(self, left: Node, right: Node, condition: str, columns: list[Col],
                  entry: IndexEntry, copy=None, table: bool = False) -> Node:
        return self._ensure("join", [left, right], columns,
                            {"join_type": "inner", "condition": condition}, entry,
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
        self.index.record(Entry(Indexed(node.id, sources, entry.indexed.predset,
                                        self.blocks[node.id][1], entry.indexed.rows)))
        self.nodes[node.id] = node
        return node

    def _ensure(self, kind: str, parents: list[Node], columns: list[Col], definition: dict,
                entry: IndexEntry, private: bool = False) -> Node:
        """An equal node (by signature), else a new one, recorded in the index."""
        names, exprs = tuple(c.name for c in columns), tuple(c.expr for c in columns)
        scope = self.query if private or self.sharing.strategy == "none" else None
        text = signature(kind, parents, names, exprs, definition, scope)
        if text in self.signatures:
            return self.nodes[self.signatures[text]]
        typed = {f'"t{k}"."{c}"': t for k, p in enumerate(parents, 1)
                 for c, t in zip(p.columns, p.types)}
        node = Node(len(self.nodes) + 1, kind,
                    max(p.join_level for p in parents) + (len(parents) > 1),
                    max(p.sequence_id for p in parents) + SEQUENCE_GAP,
                    tuple(p.id for p in parents), names, exprs,
                    ("argus_net", f"n{len(self.nodes) + 1}"), definition,
                    insert_only=all(p.insert_only for p in parents),
                    types=tuple(typed.get(e, "unknown") for e in exprs))
        self.nodes[node.id], self.signatures[text] = node, node.id
        self.created_by[node.id] = self.query
        atoms = {atom: name for name, atom in entry.atoms.items()}
        self.blocks[node.id] = (entry.sources, atoms)
        rows = math.prod(self.rows[s] for s in entry.sources) * self._share(
            dict(enumerate(entry.sources, 1)), entry.predset)
        self.index.record(Entry(Indexed(node.id, entry.sources, entry.predset, atoms,
                                        int(rows))))
        return node
