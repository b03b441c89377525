"""What a registration reads of the network, and remembers until it changes it: nodes,
their blocks and atoms in the computation index, the index's candidates, PostgreSQL's
estimates and types over the nodes' histories. These reads answer argus.mqo.sharing's
questions (mqo.protocol.Network); argus.network.Builder, which makes the nodes, is one."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import psycopg
from psycopg import sql

from ..frontend.canon import column_atom
from ..mqo import index
from ..mqo.blocks import Block, Indexed, render
from ..mqo import order
from ..mqo.order import FALLBACK_SHARE, Estimates
from ..mqo.blocks import source_atoms
from .. import pg_plan, templates
from ..names import NETWORK_SCHEMA
from ..nodes import T1, Node, virtual
from . import records
from .placement import installed, placed, replicated

T = TypeVar("T")


@dataclass(frozen=True)
class Estimated:
    """A prediction's fill of a node that is counted by an estimate meanwhile
    (Reads.estimated)."""

    fill: Callable[[], object]

    def __call__(self) -> object:
        return self.fill()


RATE_CYCLES = 20  # the cycles a node's observed rate is averaged over
REPLAN_CYCLES = 5  # … when a query is planned again: the data may have drifted

_LOAD = """
SELECT n.node_id, n.kind, n.join_level, n.sequence_id, n.hist_schema, n.hist_name,
       n.definition, n.layout, n.insert_only, n.sharded_by,
       coalesce((SELECT array_agg(e.parent_id ORDER BY e.position)
                   FROM argus_catalog.edges e WHERE e.child_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.name ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.expr ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}'),
       coalesce((SELECT array_agg(c.type ORDER BY c.position)
                   FROM argus_catalog.node_columns c WHERE c.node_id = n.node_id), '{}')
  FROM argus_catalog.nodes n
"""

def _node(row: tuple) -> Node:
    (node_id, kind, level, seq, hist_schema, hist_name, definition, layout, insert_only,
     sharded_by, parents, columns, exprs, types) = row
    return Node(id=node_id, kind=kind, join_level=level, sequence_id=seq,
                parents=tuple(parents), columns=tuple(columns), exprs=tuple(exprs),
                hist_ref=(hist_schema, hist_name), definition=definition,
                layout=layout, insert_only=insert_only, types=tuple(types), sharded_by=sharded_by)


@dataclass(frozen=True)
class LoadedNetwork:
    """The network as the catalog holds it (load)."""

    nodes: dict[int, Node]  # in evaluation order (join_level, sequence_id, node_id)
    streams: dict[str, int]  # stream name -> source node id


_LOAD_ALL = """
WITH e AS (SELECT child_id, array_agg(parent_id ORDER BY position) AS parents
             FROM argus_catalog.edges GROUP BY child_id),
     c AS (SELECT node_id, array_agg(name ORDER BY position) AS names,
                  array_agg(expr ORDER BY position) AS exprs,
                  array_agg(type ORDER BY position) AS types
             FROM argus_catalog.node_columns GROUP BY node_id)
SELECT n.node_id, n.kind, n.join_level, n.sequence_id, n.hist_schema, n.hist_name,
       n.definition, n.layout, n.insert_only, n.sharded_by, coalesce(e.parents, '{}'),
       coalesce(c.names, '{}'), coalesce(c.exprs, '{}'), coalesce(c.types, '{}')
  FROM argus_catalog.nodes n
  LEFT JOIN e ON e.child_id = n.node_id
  LEFT JOIN c ON c.node_id = n.node_id
 ORDER BY n.join_level, n.sequence_id, n.node_id
"""


def load(conn: psycopg.Connection) -> LoadedNetwork:
    rows = conn.execute(_LOAD_ALL).fetchall()
    streams = dict(conn.execute("SELECT name, node_id FROM argus_catalog.streams").fetchall())
    return LoadedNetwork({row[0]: _node(row) for row in rows}, streams)


def load_node(conn: psycopg.Connection, node_id: int) -> Node:
    row = conn.execute(_LOAD + " WHERE n.node_id = %s", (node_id,)).fetchone()
    assert row is not None, f"node {node_id} is not in the catalog"
    return _node(row)


def has_twin(conn: psycopg.Connection, node_id: int, signature: str | None = None) -> bool:
    """Whether another node is found by `signature` (the node's own, if None) where
    the node would be: findable, and private to the same query (or to none)."""
    return conn.execute(
        """SELECT EXISTS (
               SELECT FROM argus_catalog.nodes n JOIN argus_catalog.nodes o
                   ON md5(o.signature) = md5(coalesce(%s, n.signature)) AND o.findable
                  AND o.node_id <> n.node_id
                  AND coalesce(o.private_to, '') = coalesce(n.private_to, '')
                WHERE n.node_id = %s)""", (signature, node_id)).fetchone()[0]


def idle_streams(conn: psycopg.Connection) -> set[str]:
    """The streams no node reads (no child, no query's output), tables aside: their
    rows wait in their inboxes until these pass settings.unread_inbox_bytes. Not one
    copied to every Citus node: its claim would move the inbox's rows straight into
    the reference table in one statement, which Citus refuses ("relation … is not
    distributed"); it is claimed as a read stream is."""
    return {name for (name,) in conn.execute(
        """SELECT s.name FROM argus_catalog.streams s
            WHERE s.primary_key IS NULL
              AND NOT EXISTS (SELECT FROM argus_catalog.edges e WHERE e.parent_id = s.node_id)
              AND NOT EXISTS (SELECT FROM argus_catalog.queries q
                               WHERE q.output_node = s.node_id)""")} - set(replicated(conn))


def evaluate_held(conn: psycopg.Connection, exprs, relation: sql.Composable,
                  predicate: str | None = None, bound: int | None = None) -> int:
    """How many rows `exprs` give over the rows `relation` holds (as t1) where
    `predicate`, to one past `bound`, every expression computed (query/evaluate_held),
    in a savepoint: a row one fails on raises its error and undoes nothing else."""
    statement = templates.render(
        "query/evaluate_held", relation=relation, t1=T1,
        exprs=sql.SQL(", ").join(map(sql.SQL, exprs)), predicate=sql.SQL(predicate or "TRUE"),
        limit=sql.Literal(None if bound is None else bound + 1))
    with conn.transaction():
        return conn.execute(statement).fetchone()[0]


def network_bytes(conn: psycopg.Connection) -> int:
    """What the network's tables hold (argus_net: histories, deltas, their indexes):
    what settings.state_budget bounds. Stream histories are the data, not state."""
    return conn.execute(
        """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
             FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
            WHERE s.nspname = %s AND c.relkind = 'r'""", (NETWORK_SCHEMA,)).fetchone()[0]


def observed_rate(conn: psycopg.Connection, node_id: int) -> float | None:
    """Rows a node gained (or lost) per cycle in the last RATE_CYCLES cycles since it
    was made; None if no cycle ran since."""
    return observed_rates(conn, node_id, [node_id])[node_id]


def observed_rates(conn: psycopg.Connection, since: int, node_ids: list[int],
                   cycles: int = RATE_CYCLES) -> dict[int, float | None]:
    """The nodes' rows gained (or lost) per cycle over the same cycles: the last
    `cycles` since node `since` was made (None: no cycle ran since)."""
    rows = dict(conn.execute(
        """WITH r AS (SELECT run_id FROM argus_catalog.runs
                       WHERE status = 'ok' AND started_at >= (
                             SELECT created_at FROM argus_catalog.nodes WHERE node_id = %s)
                       ORDER BY run_id DESC LIMIT %s),
                ids AS (SELECT unnest(%s::bigint[]) AS node_id)
           SELECT ids.node_id, CASE WHEN (SELECT count(*) FROM r) > 0 THEN
                  coalesce((SELECT sum(n.inserted + n.retracted)::float8 FROM r
                              JOIN argus_catalog.run_nodes n ON n.run_id = r.run_id
                             WHERE n.node_id = ids.node_id), 0)
                  / (SELECT count(*) FROM r) END
             FROM ids""", (since, cycles, node_ids)).fetchall())
    return {n: rows.get(n) for n in node_ids}


# What a re-plan measures of the last cycle — its sources' new rows per cycle, the
# shares and matches of those rows, the windows as they will be — is the same for every
# build of one re-plan (a group of two queries takes five) and for every query planned
# after that cycle: kept per connection until a cycle runs (by the last run's id).
_MEASURED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Reads:
    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self._read: dict[tuple, object] = {}  # catalog reads, forgotten by forget()
        self._candidates: dict[tuple, list] = {}
        # A prediction (argus.adapt: a query planned again, built and rolled back) makes
        # its nodes empty and fills one only when something reads its rows or its count:
        # what it decides rests on estimates over streams and nodes that exist, and on
        # few of the nodes it makes (Nexmark's q4, q6 and q9 planned again together
        # filled aggregates and windows that nothing read). The builds of a group of
        # queries priced together share it (argus.adapt.together).
        self.predicting = False
        self.unfilled: dict[int, Callable[[], object]] = {}  # node id -> its fill

    def ready(self, node: Node) -> None:
        """The node's rows, filled first if a prediction made it without them (its
        parents' before)."""
        fill = self.unfilled.pop(node.id, None)
        if fill is not None:
            for parent in node.parents:
                self.ready(self.load(parent))
            fill()

    def counted(self, read: Callable[[], T], nodes: Callable[[T], Iterable[int]]) -> T:
        """`read()`, which reads the counts (node_stats.hist_rows) of the nodes `nodes`
        names in what it found: read again once those a prediction made without their
        rows (and without an estimate of them) are filled and counted."""
        found = read()
        waiting = [n for n in nodes(found)
                   if n in self.unfilled and not isinstance(self.unfilled[n], Estimated)]
        for node_id in waiting:
            self.ready(self.load(node_id))
        return read() if waiting else found

    def load(self, node_id: int) -> Node:
        return self._once(("node", node_id), lambda: load_node(self.conn, node_id))

    def _block(self, node_id: int) -> tuple[list[int], int] | None:
        return self._once(("block", node_id), lambda: index.block_of(self.conn, node_id))

    def _once(self, key: tuple, read: Callable[[], object]):
        """A registration reads the same nodes over and over: once is enough until the
        builder changes one (forget)."""
        if key not in self._read:
            self._read[key] = read()
        return self._read[key]

    def forget(self) -> None:
        """The network changed: read its nodes again."""
        self._read.clear()

    def _measured(self, key: object, read: Callable[[], T]) -> T:
        """`read()` of the last cycle, once until the next (_MEASURED)."""
        run = self._once(("run",), lambda: self.conn.execute(
            "SELECT coalesce(max(run_id), 0) FROM argus_catalog.runs").fetchone()[0])
        held = _MEASURED.get(self.conn)
        if held is None or held[0] != run:
            held = _MEASURED[self.conn] = (run, {})
        if key not in held[1]:
            held[1][key] = read()
        return held[1][key]

    def observed(self, node_id: int) -> float | None:
        return self._measured(("rate", node_id), lambda: observed_rates(
            self.conn, node_id, [node_id], REPLAN_CYCLES)[node_id])

    def recent_link(self, block: Block, linked: frozenset[int], conds,
                    rows: Mapping[int, float]) -> float | None:
        i, j = sorted(linked)

        def count(new: int) -> tuple[int, int]:
            """(new rows of `new` linked to the other's rows, new rows of `new`)."""
            where, tables = {}, []
            local = []
            for k in (i, j):
                source = self.load(block.sources[k - 1])
                self.ready(source)
                where |= {column_atom(k, c): (f"t{k}", c) for c in source.columns}
                tables.append(sql.SQL("{} AS {}").format(
                    source.delta if k == new else source.hist, sql.Identifier(f"t{k}")))
                local += block.within(frozenset({k}))
            both = " AND ".join(f"({render(c.sql, where)})" for c in [*local, *conds])
            mine = " AND ".join(f"({render(c.sql, where)})"
                                for c in block.within(frozenset({new}))) or "TRUE"
            source = self.load(block.sources[new - 1])
            counts = sql.SQL(
                "SELECT (SELECT count(*) FROM {} WHERE {}), "
                "(SELECT count(*) FROM {} AS {} WHERE {})").format(
                    sql.SQL(", ").join(tables), sql.SQL(both),
                    source.delta, sql.Identifier(f"t{new}"), sql.SQL(mine))
            return self._measured(counts.as_string(self.conn), lambda: self._counts(counts))

        if None in (found := (count(i), count(j))):
            return None
        (met_i, new_i), (met_j, new_j) = found
        pairs = new_i * rows[j] + new_j * rows[i]
        return min((met_i + met_j) / pairs, 1.0) if pairs else None

    def recent_share(self, source_id: int, instance: int, conds) -> float | None:
        source = self.load(source_id)
        where = {column_atom(instance, c): ("t1", c) for c in source.columns}
        predicate = " AND ".join(f"({render(c.sql, where)})" for c in conds) or "TRUE"
        counts = sql.SQL("SELECT count(*) FILTER (WHERE {}), count(*) FROM {} AS t1").format(
            sql.SQL(predicate), source.delta)
        found = self._measured(counts.as_string(self.conn), lambda: self._counts(counts))
        return found[0] / found[1] if found and found[1] else None

    def _counts(self, counts: sql.Composed) -> tuple | None:
        """A measurement's row of counts; None where a filter fails on a row of the last
        cycle's (the retraction of a row deleted because a query failed on it: the
        decision goes on without the measurement, as for a cycle that took no rows)."""
        try:
            with self.conn.transaction():
                return self.conn.execute(counts).fetchone()
        except psycopg.DataError:
            return None

    def turned_over(self, node_id: int) -> tuple[float, float] | None:
        """A sliding window (a temporal selection whose rows leave as the clock moves)
        once it holds only rows like the last cycles': its rows — the rows it took in
        the last cycle that brought any, times the cycles its span holds at the pace the
        clock moved then (else, its parent's rows within the span times the share of
        its new rows it took) — and its changes per cycle: as many rows leave as
        come."""
        return self._measured(("turned", node_id), lambda: self._turned_over(node_id))

    def _turned_over(self, node_id: int) -> tuple[float, float] | None:
        node = self.load(node_id)
        if not (node.kind_of.slides(node) and len(node.parents) == 1) \
                or virtual(self.load(node.parents[0])):  # (counting a view runs it)
            return None
        self.ready(self.load(node.parents[0]))
        last = self.conn.execute(
            """SELECT coalesce(t.inserted, 0), c.inserted FROM argus_catalog.run_nodes c
                 LEFT JOIN argus_catalog.run_nodes t ON t.run_id = c.run_id AND t.node_id = %s
                WHERE c.node_id = %s AND c.inserted > 0 ORDER BY c.run_id DESC LIMIT 1""",
            (node.id, node.parents[0])).fetchone()
        if last is None:
            return None
        took, came = last
        cycles = self._span_in_cycles(node)
        if cycles is not None:
            return took * cycles, 2.0 * took
        span = " AND ".join(f"({c})" for c in node.definition["clock_conjuncts"])
        (inside,) = self.conn.execute(sql.SQL("SELECT count(*) FROM {} AS t1 WHERE {}").format(
            self.load(node.parents[0]).hist, sql.SQL(span))).fetchone()
        return inside * took / came, 2.0 * took

    def _span_in_cycles(self, node: Node) -> float | None:
        """How many cycles a window's span holds at the pace the clock moved in the
        last cycle that moved it (None: one bound of its own, or the clock stood)."""
        bounds = node.definition.get("bounds") or []
        if len(bounds) != 1 or bounds[0][1] not in (">", ">="):
            return None
        bound = bounds[0]
        try:
            with self.conn.transaction():  # (a bound PostgreSQL cannot subtract: none)
                (cycles,) = self.conn.execute(sql.SQL(
                    "SELECT extract(epoch FROM c.now - ({})) / nullif(extract(epoch FROM "
                    "c.now - c.previous), 0) FROM argus_catalog.clock AS c").format(
                        sql.SQL(bound[2]))).fetchone()
        except psycopg.Error:
            return None
        return None if cycles is None or cycles <= 0 else float(cycles)

    def estimate(self, source_id: int, instance: int, conds) -> float:
        """PostgreSQL's estimate of a source's rows that satisfy `conds` (over the
        atoms of `instance`)."""
        source = self.load(source_id)
        self._analyzed(source)
        where = {column_atom(instance, c): ("t1", c) for c in source.columns}
        predicate = " AND ".join(f"({render(c.sql, where)})" for c in conds) or "TRUE"
        return self.explain(sql.SQL("SELECT 1 FROM {} AS t1 WHERE {}").format(
            source.hist, sql.SQL(predicate)))["Plan Rows"]

    def estimates(self, block) -> Estimates | None:
        if self.predicting and len(block.instances) == 1:
            return None  # (one source: no joins to order, nothing a prediction costs)
        return self.block_estimates(block) if self._layout()[0] == "cost" else None

    def estimated(self, node: Node, rows: float, rate: float, inflow: dict[int, float]
                  ) -> None:
        """The join order's estimate of the node, recorded; a node a prediction made
        without its rows is counted by it until something reads the rows themselves
        (ready): what a prediction compares of such a node is its count, and filling it
        only to count it was most of a re-plan's time (docs/adapt.md)."""
        estimate = {"rows": round(rows, 1), "rate": round(rate, 2),
                    "inflow": {str(s): round(r, 2) for s, r in inflow.items()}}
        records.set_estimate(self.conn, node.id, estimate)
        fill = self.unfilled.get(node.id)
        if fill is not None and not isinstance(fill, Estimated):
            self.unfilled[node.id] = Estimated(fill)
            records.count_estimated(self.conn, node.id, rows)

    def block_estimates(self, block: Block) -> Estimates:
        """What ordering a block's joins by cost needs (order.block_estimates), from
        PostgreSQL's estimates and the rates the cycles observed (before any,
        FALLBACK_SHARE of a source's rows)."""
        return order.block_estimates(block, self.estimate, self.inflow,
                                     lambda linked, conds: self._joined(block, linked, conds))

    def inflow(self, source: int, total: float) -> float:
        """A source's new rows per cycle, as the cycles observed them (before any,
        FALLBACK_SHARE of its `total` rows)."""
        observed = observed_rate(self.conn, source)
        return FALLBACK_SHARE * total if observed is None else observed

    def _joined(self, block: Block, linked: frozenset[int], conds) -> float:
        """PostgreSQL's estimate of the rows of `linked` instances joined by `conds`,
        each under its local conditions."""
        where, tables = {}, []
        for i in sorted(linked):
            source = self.load(block.sources[i - 1])
            self._analyzed(source)
            where |= {column_atom(i, c): (f"t{i}", c) for c in source.columns}
            tables.append(sql.SQL("{} AS {}").format(source.hist, sql.Identifier(f"t{i}")))
            conds = [*block.within(frozenset({i})), *conds]
        predicate = " AND ".join(f"({render(c.sql, where)})" for c in conds)
        return self.explain(sql.SQL("SELECT 1 FROM {} WHERE {}").format(
            sql.SQL(", ").join(tables), sql.SQL(predicate)))["Plan Rows"]

    def share_of(self, parent: Node, predicate: str | None, base: Node) -> float:
        """PostgreSQL's estimate of the share of `base`'s rows (a stream, `parent` or
        under it) that `predicate` over `parent`'s rows (t1) passes."""
        self._analyzed(base)
        self.ready(parent)

        def rows(table: sql.Composable, where: str) -> float:
            return self.explain(sql.SQL("SELECT 1 FROM {} AS t1 WHERE {}").format(
                table, sql.SQL(where)))["Plan Rows"]

        passed = rows(parent.hist, predicate or "TRUE")
        return passed / max(rows(base.hist, "TRUE"), 1.0)

    def explain(self, statement: sql.Composable) -> dict:
        """The top of PostgreSQL's plan of the statement (pg_plan.explain)."""
        return pg_plan.explain(self.conn, statement,
                             self._once(("citus",), lambda: installed(self.conn)))

    def _analyzed(self, node: Node) -> None:
        """Without statistics, PostgreSQL's estimates are guesses: gather them first —
        also of a history analyzed while it was empty (a stream no query read keeps its
        rows in its inbox until the first query's registration claims them: the drift
        bench's VACUUM ANALYZE before registering found its histories empty, and every
        filter was estimated at a third of the rows).
        (Only then: gathered again for the sources a re-plan reads — tried for issue 52 —
        they left the network's statistics half new, half old, and PostgreSQL planned
        the cycles' probes of the new joins worse: the drift bench's migrated queries
        took 37 ms per cycle instead of 22; docs/adapt.md.) Not for a history
        Citus holds: the coordinator does not plan over its own statistics of it, and
        its ANALYZE (a command per shard, in parallel) fails in a transaction that used
        a reference table's copy on the coordinator."""
        self.ready(node)
        if node.sharded_by or node.loaded and node.hist_ref[1] in self._once(
                ("placed",), lambda: placed(self.conn)):
            return
        self._once(("analyzed", node.id), lambda: self._analyze_unless_known(node))

    def _analyze_unless_known(self, node: Node) -> None:
        schema, table = node.hist_ref
        never = self.conn.execute(
            "SELECT NOT EXISTS (SELECT FROM pg_stats WHERE schemaname = %s AND tablename = %s)"
            " FROM pg_stat_user_tables WHERE relid = %s::regclass",
            (schema, table, node.hist.as_string(self.conn))).fetchone()
        if never is not None and never[0]:
            self.conn.execute(sql.SQL("ANALYZE {}").format(node.hist))

    def own_nodes(self) -> frozenset[int]:
        """The nodes of the query being planned again (none: a new query)."""
        return frozenset()

    def candidates(self, sources, shapes) -> list[Indexed]:
        key = (index.sources_key(sources), frozenset(shapes))
        if key not in self._candidates:
            self._candidates[key] = self.counted(
                lambda: index.candidates(self.conn, sources, shapes, self.own_nodes(),
                                         self.query),
                lambda found: [c.node_id for c in found])
        return self._candidates[key]

    def source_index(self, node: Node) -> Indexed:
        self.ready(node)
        (rows,) = self.conn.execute("SELECT hist_rows FROM argus_catalog.node_stats "
                                    "WHERE node_id = %s", (node.id,)).fetchone()
        return Indexed(node.id, (node.id,), frozenset(), source_atoms(node.columns), rows)

    def sources_of(self, node: Node) -> list[int]:
        found = self._block(node.id)
        return [node.id] if found is None else list(found[0])

    def atoms(self, node: Node) -> dict[str, str]:
        if self._block(node.id) is None:
            return source_atoms(node.columns)
        return dict(self._once(("atoms", node.id),
                               lambda: index.node_atoms(self.conn, node.id)))

    def column(self, node: Node, atom: str) -> str:
        return self.atoms(node)[atom]

    def probe_types(self, parent: Node, exprs: list[str]) -> list[str]:
        """PostgreSQL's types of expressions over a node's rows."""
        if not exprs:
            return []
        probe = sql.SQL("SELECT {} FROM (SELECT 1) AS d LEFT JOIN (SELECT {} FROM {} AS t1 "
                        "LIMIT 0) AS s ON TRUE").format(
            sql.SQL(", ").join(sql.SQL("pg_typeof(s.{})::text").format(sql.Identifier(f"e{i}"))
                               for i in range(len(exprs))),
            sql.SQL(", ").join(sql.SQL("{} AS {}").format(sql.SQL(e), sql.Identifier(f"e{i}"))
                               for i, e in enumerate(exprs)),
            parent.hist)
        return list(self.conn.execute(probe).fetchone())
