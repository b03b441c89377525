"""Nodes changed in place as later queries need more of them: a shared selection or
join gains columns (projection enrichment), an aggregate gains aggregates or is computed
from a finer aggregate instead of its input (horizontal expansion, rerouting). Their
consumers read columns by name and are unaffected; a changed node keeps who may find it,
and a twin it now equals stays the one found (_resigned).
"""

from __future__ import annotations

import dataclasses
import functools

from psycopg import sql
from sqlglot import exp

from ..aggregates import Model, entries
from ..mqo.blocks import enriched_columns, enriched_parents, enrichment
from ..names import NETWORK_SCHEMA
from ..nodes import COMPILERS, Node, delta_view, signature, virtual
from ..nodes import lazy as lazy_nodes
from ..nodes.aggregate import parent_index_name
from ..nodes.lazy import is_lazy
from ..plan import Col
from ..trees import qualified, tree_of
from . import jisc, records
from .apply import SEQUENCE_GAP
from .reads import has_twin
from .stored import execute_all


def growing(definition: dict, parent: Node) -> dict:
    """An aggregate's layout marks: "grows" when its input only grows
    (nodes.aggregate.grows): an insert-only parent, or — computed from its books (a regroup,
    every aggregate "from" the parent's) — an aggregate over such an input; else
    "outward" or "counted" when it keeps MIN/MAX books (argus.aggregates.Book)."""
    regroup = all(entry.regrouped for entry in entries(definition))
    if parent.insert_only or (parent.kind_of.groups and regroup
                              and bool(parent.layout.get("grows"))):
        return {"grows": True}
    if (model := Model.of(definition)).has_extremes:
        # its MIN/MAX books only move outward, or keep how many rows are at the extreme
        return {"outward" if _outward(definition, model, parent) else "counted": True}
    return {}


_RISING = {"max": ("count", "max"), "min": ("min",)}  # (what a growing aggregate's
# column is, for a MIN or MAX over it to only move outward: counts and maxima only rise)


def _outward(definition: dict, model: Model, parent: Node) -> bool:
    """Every MIN/MAX of an aggregate over a growing aggregate's groups reads a column
    that only moves its way (a MAX of counts: Nexmark q5's busiest auction per window),
    and its groups are the parent's groups' own (a parent row never changes group): a
    retracted row of the parent comes back, beyond or level, so the extreme never
    leaves and is never read again from the parent (nodes.aggregate.outward). Not a
    numeric sum's largest scale: a growing aggregate's value can lose decimals (a MIN
    moving to 1.5 from 2.125, an average; found by a helper)."""
    if not (parent.kind_of.groups and parent.layout.get("grows")) or model.keeps_scale:
        return False
    keys = {qualified("t1", g) for g, _ in parent.definition["groups"]}
    if not all(_columns(e) <= keys for _, e in definition["groups"]):
        return False
    funcs = {qualified("t1", e.name): e.func for e in entries(parent.definition)}
    return all(e.func not in _RISING or e.merge is None and funcs.get(e.arg) in _RISING[e.func]
               for e in entries(definition))


def _columns(text: str) -> set[str]:
    return {qualified("t1", c.name) for c in tree_of(text).find_all(exp.Column)}


class Reshape:
    """The builder's in-place changes (network.builder.Builder mixes it in)."""

    def enrich(self, node: Node, atoms: set[str]) -> Node:
        """Projection enrichment: add columns holding `atoms` (over the node's STAs) to
        a shared selection or join node, first to the parents that lack them, and
        refill it from its parents. Its children and the views over it read columns by
        name, so they are unaffected."""
        if is_lazy(self.load(node.id)):  # (its full view and completed keys lack them)
            jisc.finish(self.conn, [node.id])
            self.forget()
        node = self.load(node.id)  # the caller's may predate an enrichment of it
        atoms = atoms - set(self.atoms(node))
        if not atoms:  # (two instances of one query read it, and the other's added them)
            return node
        parents = [self.load(p) for p in node.parents]
        plan = enrichment(atoms, len(self.sources_of(parents[0])) if node.kind_of.joins
                          else None)
        parents = enriched_parents(plan, parents, self.atoms, self.enrich)
        added = enriched_columns(node, parents, plan, self.atoms, len(self.sources_of(node)))
        tables = [t for t, view in ((node.hist, virtual(node)), (node.delta, delta_view(node)))
                  if not view]
        for table in tables:
            self.conn.execute(sql.SQL("ALTER TABLE {} {}").format(table, sql.SQL(", ").join(
                sql.SQL("ADD COLUMN {} {}").format(sql.Identifier(n), sql.SQL(t))
                for n, _, t, _ in added)))
        records.add_columns(self.conn, node, added)
        self.enriched.add(node.id)
        self.forget()
        node = self.load(node.id)
        records.set_signature(self.conn, node.id,
                              *self._resigned(node, parents, node.definition))
        if virtual(node):  # the views gain the columns at their end
            execute_all(self.conn, COMPILERS[node.kind].views(node, parents))
        else:
            self.conn.execute(sql.SQL("TRUNCATE {}").format(node.hist))
            if self.predicting:  # (filled when something reads it: network.reads.ready)
                self.unfilled[node.id] = functools.partial(self._refill, node, parents)
            else:
                self._refill(node, parents)
        self._store(node, parents)
        self._candidates.clear()
        return node

    def _refill(self, node: Node, parents: list[Node]) -> None:
        for parent in parents:
            self.ready(parent)
        execute_all(self.conn, COMPILERS[node.kind].backfill(
            node, list(map(lazy_nodes.readable, parents))))
        self.conn.execute(sql.SQL("ANALYZE {}").format(node.hist))  # as a new node's

    def _resigned(self, node: Node, parents: list[Node], definition: dict
                  ) -> tuple[str, bool]:
        """The signature of a node changed in place (enriched, restructured), and whether
        it is found by it. Who may find it stays: a node of a query registered without
        sharing stays that query's. And an equal node made before (a twin computing the
        same rows) stays the one found. (Once an aggregate of a query without sharing,
        moved onto a finer one, took the signature of the shared twin it now equalled,
        and the registration failed.)"""
        text = signature(node.kind, parents, node.columns, node.exprs, definition)
        (findable,) = self.conn.execute("SELECT findable FROM argus_catalog.nodes "
                                        "WHERE node_id = %s", (node.id,)).fetchone()
        return text, findable and not has_twin(self.conn, node.id, text)

    def restructure(self, node: Node, definition: dict, columns: list[Col],
                    new_parent: Node | None = None) -> Node:
        """Change an aggregate node in place — more aggregates (horizontal expansion), or
        computed from a finer aggregate (rerouting): its tables gain the new stored
        columns and lose the obsolete ones, and it is refilled from its parent. Its
        visible columns keep their names and values, so its consumers are unaffected."""
        parent = new_parent or self.load(node.parents[0])
        layout = {k: v for k, v in node.layout.items() if k not in ("grows", "counted",
                                                                      "outward")}
        layout |= growing(definition, parent)
        compiler = COMPILERS["aggregate"]
        old, new = node.spec, Model.of({**definition, **layout})
        probe = sql.Identifier("argus_restructure_probe")
        self.conn.execute(sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS {} WITH NO DATA")
                          .format(probe, compiler.from_scratch(new, parent)))
        types = dict(self.conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'argus_restructure_probe'::regclass AND attnum > 0").fetchall())
        self.conn.execute(sql.SQL("DROP TABLE {}").format(probe))
        add = [c for c in new.stored if c not in old.stored]
        drop = [c for c in old.stored if c not in new.stored]
        for table in (node.hist, node.delta):
            changes = [sql.SQL("ADD COLUMN {} {}").format(sql.Identifier(c), sql.SQL(types[c]))
                       for c in add]
            changes += [sql.SQL("DROP COLUMN {}").format(sql.Identifier(c)) for c in drop]
            if changes:
                self.conn.execute(sql.SQL("ALTER TABLE {} {}").format(
                    table, sql.SQL(", ").join(changes)))
        self.forget()
        records.replace_columns(self.conn, node.id, [(c.name, c.expr) for c in columns])
        node = dataclasses.replace(node, parents=(parent.id,), definition=definition,
                                   layout=layout, columns=tuple(c.name for c in columns),
                                   exprs=tuple(c.expr for c in columns))
        node = dataclasses.replace(node, types=self._record_types(node))
        records.set_definition(self.conn, node.id, definition, layout,
                               *self._resigned(node, [parent], definition))
        if new_parent is not None:
            old_parent = self.load(self.conn.execute(
                "SELECT parent_id FROM argus_catalog.edges WHERE child_id = %s",
                (node.id,)).fetchone()[0])
            self.conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.Identifier(old_parent.hist_ref[0], parent_index_name(node.id))))
            self.forget()
            records.reparent(self.conn, node.id, new_parent, SEQUENCE_GAP)
            execute_all(self.conn, compiler.parent_index(node, parent))
        aux = [r[0] for r in self.conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
            (NETWORK_SCHEMA, f"n{node.id}\\_d%"))]
        self.conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(
            [node.hist] + [sql.Identifier(NETWORK_SCHEMA, t) for t in aux
                           if t != f"n{node.id}_delta"])))
        self.unfilled.pop(node.id, None)  # (refilled now)
        self.ready(parent)
        execute_all(self.conn, compiler.backfill(node, [parent]))
        self.conn.execute(sql.SQL("ANALYZE {}").format(node.hist))  # as a new node's
        self._store(node, [parent])
        return node

