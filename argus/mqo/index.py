"""The computation index in the catalog (catalog/schema.sql): record what a new node
computes, and find the nodes that could compute part of a new query.

The search is SQL over B-tree indexes: nodes joining the same sources (the topology
layer), pruned to those whose every OR-predicate has a literal on a left side the
query constrains (literal layer). The survivors' PredSets are read back as `Literal`s
and matched exactly, with subsumption and STA assignment, by `argus.mqo.blocks.matches`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

import psycopg
from psycopg import sql

from ..frontend.canon import Literal, PredSet, clause_text, predset_text
from .blocks import Indexed
from .memory_index import Entry, sources_key


def predset_id(conn: psycopg.Connection, predset: PredSet) -> int:
    """The id of a PredSet, inserting it and its OR-predicates and literals if new."""
    pid, new = _interned(conn, "predsets", predset_text(predset))
    for clause in predset if new else ():
        oid, new_clause = _interned(conn, "orpreds", clause_text(clause))
        conn.execute("INSERT INTO argus_catalog.predset_orpreds VALUES (%s, %s) "
                     "ON CONFLICT DO NOTHING", (pid, oid))
        for literal in clause if new_clause else ():
            conn.execute("INSERT INTO argus_catalog.orpred_literals VALUES (%s, %s) "
                         "ON CONFLICT DO NOTHING", (oid, _literal_id(conn, literal)))
    return pid


def _interned(conn: psycopg.Connection, table: str, canonical: str) -> tuple[int, bool]:
    """(id, newly inserted) of a canonical text in argus_catalog.predsets or .orpreds."""
    ref = sql.Identifier("argus_catalog", table)
    found = conn.execute(sql.SQL("SELECT * FROM {} WHERE md5(canonical) = md5(%s)").format(ref),
                         (canonical,)).fetchone()
    if found:
        return found[0], False
    inserted = conn.execute(sql.SQL("INSERT INTO {} (canonical) VALUES (%s) RETURNING *")
                            .format(ref), (canonical,)).fetchone()
    return inserted[0], True


def _literal_id(conn: psycopg.Connection, literal: Literal) -> int:
    found = conn.execute("SELECT literal_id FROM argus_catalog.literals "
                         "WHERE md5(canonical) = md5(%s)", (literal.text,)).fetchone()
    if found:
        return found[0]
    kind, const = literal.const if literal.const is not None else (None, None)
    (lid,) = conn.execute(
        """INSERT INTO argus_catalog.literals (canonical, lhs, shape, op, const_kind, const, terms)
           VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING literal_id""",
        (literal.text, literal.lhs, literal.shape, literal.op, kind, const,
         json.dumps([[atom, str(coef)] for atom, coef in literal.terms]))).fetchone()
    return lid


def record_block(conn: psycopg.Connection, node_id: int, sources: Sequence[int],
                 predset: PredSet, dpredset: PredSet | None, atoms: Mapping[str, str],
                 parents: Sequence[int]) -> None:
    """Index a selection or join node: its sources in STA order, its PredSet over them,
    the condition it applies to its parents, and the atom each column holds."""
    svoa, jvoas = _voas(conn, node_id, parents)
    conn.execute(
        """INSERT INTO argus_catalog.topology
               (node_id, sources, sources_key, predset_id, dpredset_id, svoa, jvoas)
           VALUES (%s, %s, %s, %s, %s, %s, %s)
           ON CONFLICT (node_id) DO UPDATE SET predset_id = excluded.predset_id""",
        (node_id, list(sources), sources_key(sources), predset_id(conn, predset),
         predset_id(conn, dpredset) if dpredset is not None else None, svoa, jvoas))
    record_atoms(conn, node_id, atoms)


def record_atoms(conn: psycopg.Connection, node_id: int, atoms: Mapping[str, str]) -> None:
    """atoms: node column -> canonical atom over the node's STAs."""
    with conn.cursor() as cur:
        cur.executemany("UPDATE argus_catalog.node_columns SET atom = %s "
                        "WHERE node_id = %s AND name = %s",
                        [(atom, node_id, name) for name, atom in atoms.items()])


def _voas(conn: psycopg.Connection, node_id: int, parents: Sequence[int]):
    """ARGUS's shortcuts: a selection's SVOA is its closest join-or-source ancestor (a
    join's is itself); JVOAs are the SVOAs of a join's parents (a selection inherits
    its SVOA's)."""
    rows = dict((r[0], r[1:]) for r in conn.execute(
        "SELECT node_id, svoa, jvoas FROM argus_catalog.topology WHERE node_id = ANY(%s)",
        (list(parents),)))
    if len(parents) == 1:
        parent = parents[0]
        svoa, jvoas = rows.get(parent, (parent, None))
        return svoa if svoa is not None else parent, jvoas
    return node_id, [rows.get(p, (p, None))[0] or p for p in parents]


_CANDIDATES = """
SELECT t.node_id, t.sources, n.hist_rows
  FROM argus_catalog.topology t JOIN argus_catalog.node_stats n USING (node_id)
 WHERE t.sources_key = %(key)s
   AND t.node_id NOT IN (SELECT node_id FROM argus.excluded_nodes())  -- stale: isolated
   AND t.node_id NOT IN (SELECT node_id FROM argus_catalog.nodes  -- another query's own
                          WHERE private_to <> %(query)s)
   AND (t.node_id = ANY(%(visible)s)  -- (its own query planned again sees it)
        OR t.node_id NOT IN (SELECT node_id FROM argus_catalog.nodes   -- partial: being
                              WHERE layout ? 'lazy'))  -- completed (JISC)
   AND NOT EXISTS (
       SELECT 1 FROM argus_catalog.predset_orpreds po
        WHERE po.predset_id = t.predset_id
          AND NOT EXISTS (SELECT 1 FROM argus_catalog.orpred_literals ol
                            JOIN argus_catalog.literals l USING (literal_id)
                           WHERE ol.orpred_id = po.orpred_id AND l.shape = ANY(%(shapes)s)))
 ORDER BY t.node_id
"""

_LITERALS = """
SELECT t.node_id, po.orpred_id, l.terms, l.op, l.const_kind, l.const
  FROM argus_catalog.topology t
  JOIN argus_catalog.predset_orpreds po ON po.predset_id = t.predset_id
  JOIN argus_catalog.orpred_literals ol ON ol.orpred_id = po.orpred_id
  JOIN argus_catalog.literals l ON l.literal_id = ol.literal_id
 WHERE t.node_id = ANY(%s)
"""


def candidates(conn: psycopg.Connection, sources: Iterable[int],
               shapes: Iterable[str], visible: Iterable[int] = (),
               query: str = "") -> list[Indexed]:
    """Indexed nodes joining exactly these sources whose PredSets the query could imply;
    no lazily built join (argus.network.jisc) but those `visible`, and no node private
    to a query other than `query`."""
    return _indexed(conn, conn.execute(_CANDIDATES, {"key": sources_key(sources),
                                                     "shapes": sorted(set(shapes)),
                                                     "visible": sorted(visible),
                                                     "query": query}).fetchall())


def entries(conn: psycopg.Connection) -> list[Entry]:
    """The whole index, as a MemoryIndex holds it."""
    rows = conn.execute(
        """SELECT t.node_id, t.sources, n.hist_rows, n.node_id IN (
                  SELECT node_id FROM argus.excluded_nodes()), d.layout ? 'lazy',
                  d.private_to
             FROM argus_catalog.topology t JOIN argus_catalog.node_stats n USING (node_id)
             JOIN argus_catalog.nodes d USING (node_id) ORDER BY t.node_id""").fetchall()
    flags = {r[0]: r[3:] for r in rows}
    return [Entry(i, lazy=flags[i.node_id][1], excluded=flags[i.node_id][0],
                  private_to=flags[i.node_id][2])
            for i in _indexed(conn, [r[:3] for r in rows])]


def _indexed(conn: psycopg.Connection, rows: list[tuple]) -> list[Indexed]:
    """Indexed nodes of (node, sources, rows) rows, their PredSets and atoms read."""
    if not rows:
        return []
    ids = [r[0] for r in rows]
    clauses: dict[int, dict[int, set[Literal]]] = {i: {} for i in ids}
    for node_id, orpred, terms, op, kind, const in conn.execute(_LITERALS, (ids,)):
        literal = Literal(tuple((atom, Fraction(coef)) for atom, coef in terms), op,
                          (kind, const) if kind is not None else None)
        clauses[node_id].setdefault(orpred, set()).add(literal)
    columns: dict[int, dict[str, str]] = {i: {} for i in ids}
    for node_id, atom, name in conn.execute(
            "SELECT node_id, atom, name FROM argus_catalog.node_columns "
            "WHERE node_id = ANY(%s) AND atom IS NOT NULL", (ids,)):
        columns[node_id][atom] = name
    return [Indexed(node_id, tuple(srcs), frozenset(frozenset(c) for c in
                                                   clauses[node_id].values()),
                    columns[node_id], hist_rows)
            for node_id, srcs, hist_rows in rows]


def node_atoms(conn: psycopg.Connection, node_id: int) -> dict[str, str]:
    """Canonical atom -> column of an indexed node."""
    return {atom: name for atom, name in conn.execute(
        "SELECT atom, name FROM argus_catalog.node_columns WHERE node_id = %s "
        "AND atom IS NOT NULL", (node_id,))}


def block_of(conn: psycopg.Connection, node_id: int) -> tuple[list[int], int] | None:
    """(sources in STA order, width) of an indexed node, None if it is not indexed."""
    row = conn.execute("SELECT sources FROM argus_catalog.topology WHERE node_id = %s",
                       (node_id,)).fetchone()
    return None if row is None else (list(row[0]), len(row[0]))


def drop_orphans(conn: psycopg.Connection) -> None:
    """Forget PredSets, OR-predicates and literals no indexed node uses any more."""
    conn.execute("""DELETE FROM argus_catalog.predsets p WHERE NOT EXISTS (
                        SELECT 1 FROM argus_catalog.topology t
                         WHERE p.predset_id IN (t.predset_id, t.dpredset_id))""")
    conn.execute("""DELETE FROM argus_catalog.orpreds o WHERE NOT EXISTS (
                        SELECT 1 FROM argus_catalog.predset_orpreds p
                         WHERE p.orpred_id = o.orpred_id)""")
    conn.execute("""DELETE FROM argus_catalog.literals l WHERE NOT EXISTS (
                        SELECT 1 FROM argus_catalog.orpred_literals o
                         WHERE o.literal_id = l.literal_id)""")
