"""Making a node the builder decided on (NewNode): its catalog record, its tables, its
rows (from its parents, a migrated node's, or none yet: a view, a lazy join), its
statistics and its compiled code. Nothing here decides what a node is or how it is
kept: network.builder does, before anything is written.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

from psycopg import sql

from ..errors import QueryError
from ..names import NETWORK_SCHEMA
from ..nodes import COMPILERS, Node, delta_view, virtual
from ..nodes import lazy as lazy_nodes
from . import jisc, records
from .durability import persist
from .stored import execute_all

SEQUENCE_GAP = 1000  # ARGUS's k: room to insert nodes between parent and child later
SLOW_BUILD_SECONDS = 1.0  # a node built slower than this is said to be, as it is built
log = logging.getLogger(__name__)  # (argus's command line prints its messages)

# Columns of a table and whether their type can be hashed (argus.hashable)
_COLUMN_TYPES = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), argus.hashable(a.atttypid)
  FROM pg_attribute a
 WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum
"""


@dataclass(frozen=True)
class NewNode:
    """A node to make, as decided before anything is written: what it computes (kind,
    parents, columns, definition: found by its signature), how it keeps its rows
    (layout: nodes.base.LAYOUT), who finds it (`private_to`: the one query it is for, or
    anyone's; `findable`: false for a join built lazily) and how it is filled —
    "parents" (its backfill, stopped at `limit` rows past which an inner join is a view
    instead), "lazily" (a JISC migration's join: network.jisc), "view" (a view at
    once), or "copy" (a migration's answer, from node `copy[0]`'s columns
    `copy[1]`)."""

    kind: str
    parents: tuple[Node, ...]
    names: tuple[str, ...]
    exprs: tuple[str, ...]
    definition: dict
    layout: dict
    insert_only: bool
    signature: str
    private_to: str | None = None
    findable: bool = True
    fill: str = "parents"
    limit: int | None = None
    copy: tuple[int, dict[str, str]] | None = None


class Apply:
    """The builder's side that writes (network.builder.Builder mixes it in)."""

    def create(self, new: NewNode, entry=None) -> Node:
        """Make the decided node: recorded, its tables created, filled, counted,
        analyzed and compiled; recorded in the computation index under `entry`."""
        parents = list(new.parents)
        (node_id,) = self.conn.execute(
            "SELECT nextval(pg_get_serial_sequence('argus_catalog.nodes', 'node_id'))"
        ).fetchone()
        node = Node(id=node_id, kind=new.kind,
                    join_level=max(p.join_level for p in parents) + (len(parents) > 1),
                    sequence_id=max(p.sequence_id for p in parents) + SEQUENCE_GAP,
                    parents=tuple(p.id for p in parents), columns=new.names, exprs=new.exprs,
                    hist_ref=(NETWORK_SCHEMA, f"n{node_id}"), definition=new.definition,
                    layout=new.layout, insert_only=new.insert_only)
        records.insert_node(self.conn, node, new.signature, new.private_to, new.findable)
        execute_all(self.conn, COMPILERS[new.kind].create(
            node, list(map(lazy_nodes.readable, parents))))  # (whole histories)
        if not self.predicting:  # (unlogged while still empty: settings.durability)
            persist(self.conn, node_id)
        node = dataclasses.replace(node, types=self._record_types(node))
        if self.predicting and new.fill in ("parents", "copy") and new.limit is None:
            self.unfilled[node.id] = lambda: self._fill(node, new, take=False)
        else:
            for parent in parents:
                self.ready(parent)
            node = self._fill(node, new)
        self._store(node, parents)
        if entry is not None:
            self._record(node, parents, entry)
        self.created.append(node)
        return node

    def _fill(self, node: Node, new: NewNode, take: bool = True) -> Node:
        """Fill a made node, count its rows and gather its statistics: at once, or,
        in a prediction, when something first reads it (network.reads.ready; `take`:
        not by taking an old answer's table over, which views over the new one made
        since would not follow)."""
        parents = list(new.parents)
        started = time.perf_counter()
        node, counted, taken = self._filled(node, new, take)
        if delta_view(node) and virtual(self._stored(parents[0])):
            # a view of a virtual join: its rows are not counted (that would run the
            # join); its parent's are, as many as it can have
            (counted,) = self.conn.execute(
                "SELECT hist_rows FROM argus_catalog.node_stats WHERE node_id = %s",
                (parents[0].id,)).fetchone()
        records.count_built(self.conn, node, (time.perf_counter() - started) * 1000, counted)
        if (seconds := time.perf_counter() - started) > SLOW_BUILD_SECONDS:  # a sign of life
            log.info("argus: node %d (%s) built from its parents in %.1f s", node.id,
                     new.kind, seconds)
        # statistics now, not when autovacuum gets to it: planned blind, a cycle's
        # statements over the new history are planned as over an empty table
        if not virtual(node) and new.fill != "lazily" and not taken:
            self.conn.execute(sql.SQL("ANALYZE {}").format(node.hist))
        return node

    def _filled(self, node: Node, new: NewNode, take: bool = True
                ) -> tuple[Node, int | None, int | None]:
        """The new node with its rows, as `new.fill` says: (the node, as it is now — a
        join past its limit is a view —, its rows where they are not to be counted,
        the rows of an old answer whose table it took over)."""
        parents, limit = list(new.parents), new.limit
        compiler = COMPILERS[new.kind]
        if new.fill == "lazily":
            jisc.create_full(self.conn, node, parents)
            persist(self.conn, node.id)
            self.pending_lazy.add(node.id)
            return node, None, None
        if new.fill == "view":
            return self._view_instead(node, parents), limit, None
        if new.fill == "copy":
            source, where = new.copy
            taken = self._take_over(node, self.load(source), where, limit) if take else None
            if taken is not None:  # (the old answer's table, renamed: its rows and statistics)
                return node, taken, taken
            filled = self.conn.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}{}").format(
                node.hist, sql.SQL(", ").join(map(sql.Identifier, where)),
                sql.SQL(", ").join(map(sql.Identifier, where.values())),
                self.load(source).hist, sql.SQL("") if limit is None else
                sql.SQL(" LIMIT {}").format(sql.Literal(limit)))).rowcount
        elif limit is None:
            execute_all(self.conn, compiler.backfill(
                node, list(map(lazy_nodes.readable, parents))))
            return node, None, None
        else:
            filled = self.conn.execute(compiler.backfill(node, parents, limit)[0]).rowcount
        if filled == limit:
            return self._view_instead(node, parents), limit, None
        return node, None, None

    def _take_over(self, node: Node, old: Node, where: dict[str, str], limit: int | None
                   ) -> int | None:
        """A migration's new answer node takes the old answer's table instead of a copy
        of it, when the old one is its query's own (dropped after the switch) and holds
        the same columns, and nothing else reads it: the tables swap names, the columns are
        renamed, the ones not needed dropped (a second block copying it is built from
        its parents instead: `taken`). Its rows (and PostgreSQL's statistics of them) stay;
        the old node is left the new node's empty table, to be dropped. None: copy
        instead."""
        rows, readers = self.conn.execute(
            "SELECT hist_rows, (SELECT count(*) FROM argus_catalog.edges WHERE parent_id = %(n)s)"
            " + (SELECT count(*) FROM argus_catalog.queries WHERE output_node = %(n)s)"
            " FROM argus_catalog.node_stats WHERE node_id = %(n)s", {"n": old.id}).fetchone()
        if (old.id not in self.own_nodes() or readers > 1  # (one block read twice: copied)
                or virtual(old) or not old.insert_only
                or len(set(where.values())) != len(where)
                or (limit is not None and rows >= limit)
                or any(dict(zip(old.columns, old.types)).get(o) != t
                       for o, t in zip(where.values(), node.types))):
            return None
        schema, taking = NETWORK_SCHEMA, f"n{node.id}_taking"
        for table, name in ((old.hist, taking), (node.hist, old.hist_ref[1]),
                            (sql.Identifier(schema, taking), node.hist_ref[1])):
            self.conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                table, sql.Identifier(name)))
        drop = [c for c in old.columns if c not in where.values()]
        if drop:
            self.conn.execute(sql.SQL("ALTER TABLE {} {}").format(node.hist, sql.SQL(", ").join(
                sql.SQL("DROP COLUMN {}").format(sql.Identifier(c)) for c in drop)))
        for step in (lambda i, new, was: (was, f"argus_taking_{i}"),  # (a new name may be
                     lambda i, new, was: (f"argus_taking_{i}", new)):  # an old one's)
            for i, (new, was) in enumerate(where.items()):
                before, after = step(i, new, was)
                self.conn.execute(sql.SQL("ALTER TABLE {} RENAME COLUMN {} TO {}").format(
                    node.hist, sql.Identifier(before), sql.Identifier(after)))
        self.taken.add(old.id)
        return rows

    def _record_types(self, node: Node) -> tuple[str, ...]:
        """The types of the node's columns in its table, recorded; refused where its rows
        are told apart by their hash (to retract one, or to count equal ones) and a
        column's type has no hash function (money, bit: a helper's attack registered
        DISTINCT over money, then failed every cycle)."""
        self.forget()
        rows = self.conn.execute(_COLUMN_TYPES, (node.hist.as_string(self.conn),)).fetchall()
        types = {name: (pg_type, hashable) for name, pg_type, hashable in rows}
        hashed = [(n, *types[n]) for n in node.columns
                  if not node.insert_only or node.kind_of.hashes_rows]
        for table in node.kind_of.aux_tables(node):
            hashed += self.conn.execute(_COLUMN_TYPES, (table.as_string(self.conn),)).fetchall()
        for name, pg_type, hashable in hashed:
            if not hashable:
                raise QueryError(
                    f"PostgreSQL cannot hash values of type {pg_type}, and argus tells rows "
                    "apart by their hash here (DISTINCT, UNION, INTERSECT, EXCEPT, "
                    "count(DISTINCT ...), GROUP BY, PARTITION BY, an outer join): cast them "
                    f"to a type that hashes, such as numeric, text or jsonb (node {node.id}'s "
                    f"column {name})")
        records.record_types(self.conn, node.id, {n: types[n][0] for n in node.columns})
        return tuple(types[n][0] for n in node.columns)
