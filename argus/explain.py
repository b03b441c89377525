"""`explain`: a query's nodes in the network and the SQL each one runs."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import psycopg
from psycopg import sql

from . import citus, network
from .adapt.records import RECENT
from .nodes import KINDS, virtual
from .optimize import predicted, proposals
from .nodes.lazy import done, is_lazy, keys
from .nodes.stream import claim
from .names import changes_view, results_view
from .network.reads import LoadedNetwork
from .registry import QueryInfo, query_info


def describe(node) -> list[str]:
    """What a node computes, in a line or two (its kind's `describe`)."""
    return KINDS[node.kind].describe(node)


_LAST_RUN = """
SELECT n.node_id, n.apply_ms_row, n.rebuild_ms_row, r.ms, r.flush_ms, r.inserted + r.retracted,
       r.changes, r.apply_ms, r.rebuild_ms, r.rebuilt
  FROM argus_catalog.node_stats n
  LEFT JOIN argus_catalog.run_nodes r
         ON r.node_id = n.node_id
        AND r.run_id = (SELECT max(run_id) FROM argus_catalog.runs WHERE status = 'ok')
"""


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:,.1f} ms"


def maintenance(node, stats: tuple | None) -> list[str]:
    """How the node keeps its history, what it learned, and what the last cycle did."""
    apply_row, rebuild_row, ms, flush_ms, rows, changes, apply_ms, rebuild_ms, rebuilt = \
        stats or (None,) * 9
    if virtual(node):
        lines = ["maintenance: none, its history is a view: "
                 + node.kind_of.as_view]
        if node.layout.get("deferred"):
            lines.append("changes: computed when read, from its parents' deltas and "
                         "histories (deferred: no node consumes them, so cycles do not "
                         "compute them, nor count them)")
    elif node.insert_only:
        lines = ["maintenance: its delta is appended to its history (insert-only)"]
    else:
        learned = ", ".join(f"{what} {value:.4f} ms/row" for what, value in
                            (("apply", apply_row), ("rebuild", rebuild_row))
                            if value is not None) or "nothing yet"
        lines = ["maintenance: per cycle, the cheaper of applying its changes and "
                 f"rebuilding it from its parents (learned costs: {learned})"]
        if changes is not None and flush_ms is not None:
            predicted = f"predicted apply {_ms(apply_ms)}, rebuild {_ms(rebuild_ms)}"
            lines.append(f"last cycle: {'REBUILT' if rebuilt else 'applied'} "
                         f"({changes:,} changes; {predicted}) in {_ms(flush_ms)}")
    if ms is not None:
        lines.append(f"last cycle: {rows:,} delta rows in {_ms(ms)}"
                     + ("" if virtual(node) else f", history maintained in {_ms(flush_ms)}"))
    return lines


def _costed(order: dict) -> str:
    return (f"{order['tree']}  (estimated {order['cpu']:,.1f} row operations per cycle, "
            f"{order['state']:,} rows held)")


@dataclass
class _Facts:
    """What explaining a query reads of the catalog, once."""

    info: QueryInfo
    net: LoadedNetwork
    canonical: str
    join_orders: list | None
    evaluate: str
    estimates: dict
    users: dict
    stream_of: dict
    on_workers: dict
    blocks: dict
    indexed: dict
    last_run: dict
    proposed: dict


def _facts(conn: psycopg.Connection, name: str) -> _Facts:
    info = query_info(conn, name)
    canonical, join_orders, evaluate = conn.execute(
        "SELECT canonical, join_orders, evaluate FROM argus_catalog.queries WHERE name = %s",
        (info.name,)).fetchone()
    ids = [ref.id for ref in info.nodes]
    users: dict[int, list[str]] = {}
    for node_id, query in conn.execute(
            """SELECT qn.node_id, q.name FROM argus_catalog.query_nodes qn
                 JOIN argus_catalog.queries q USING (query_id) ORDER BY q.name"""):
        users.setdefault(node_id, []).append(query)
    net = network.load(conn)
    return _Facts(
        info=info, net=net, canonical=canonical, join_orders=join_orders, evaluate=evaluate,
        estimates=dict(conn.execute(
            "SELECT n.node_id, n.estimate || jsonb_build_object('hist_rows', s.hist_rows) "
            "FROM argus_catalog.nodes n JOIN argus_catalog.node_stats s USING (node_id) "
            "WHERE n.estimate IS NOT NULL AND n.node_id = ANY(%s)", (ids,))),
        users=users,
        stream_of={node_id: stream for stream, node_id in net.streams.items()},
        on_workers=citus.placed(conn),
        blocks={node_id: (cycle, flush) for node_id, cycle, flush in conn.execute(
            "SELECT node_id, cycle_block, flush_block FROM argus_catalog.nodes")},
        indexed={node_id: (sources, predset) for node_id, sources, predset in conn.execute(
            "SELECT node_id, sources, predset FROM argus.index")},
        last_run={row[0]: row[1:] for row in conn.execute(_LAST_RUN)},
        # what the layout rules say of its nodes today
        proposed={p.node: p for p in proposals(conn, set(ids))})


def explain(conn: psycopg.Connection, name: str, code: bool = False) -> str:
    """The query's nodes: what each computes, keeps and cost; with `code`, the SQL each
    runs and the query's views too."""
    facts = _facts(conn, name)
    out = _header(conn, facts)
    out.append("  nodes, in evaluation order (join_level, sequence_id):")
    for ref in facts.info.nodes:
        out += _node(conn, facts, facts.net.nodes[ref.id], code)
    if not code:
        out.append("  (the SQL each node runs, and the query's views: with --code)")
        return "\n".join(out)
    out.append("  views:")
    for view in (results_view(facts.info.name), changes_view(facts.info.name)):
        (definition,) = conn.execute("SELECT pg_get_viewdef(%s::regclass, true)",
                                     (view.as_string(conn),)).fetchone()
        out.append(_indented(conn, sql.SQL("CREATE VIEW {} AS\n{}").format(
            view, sql.SQL(definition))))
    return "\n".join(out)


def _indented(conn: psycopg.Connection, statement: sql.Composable) -> str:
    return textwrap.indent(statement.as_string(conn), "        ")


def _header(conn: psycopg.Connection, facts: _Facts) -> list[str]:
    """The query, its views, its join orders and how it was last re-planned."""
    info = facts.info
    out = [f"query {info.name}", textwrap.indent(info.sql.strip(), "    "),
           f"  canonical: {facts.canonical}",
           f"  answer:  {results_view(info.name).as_string(conn)} ("
           + ", ".join(f"{c} {t}" for c, t in info.columns) + ")",
           f"  changes: {changes_view(info.name).as_string(conn)} (same columns + argus_sign)"]
    for order in facts.join_orders or []:
        out.append(f"  join order by cost: {_costed(order)}")
        out += [f"    alternative: {_costed(a)}" for a in order["alternatives"]]
    if facts.evaluate == "rerun":
        out.append("  evaluated by re-running it in each cycle that brings its streams rows "
                   "(not incrementally)")
    for at, run, why, trees in conn.execute(
            """SELECT at::timestamp(0), after_run, why,
                      coalesce(old_evaluate || ' → ' || new_evaluate,
                               array_to_string(old_trees, '; ') || ' → '
                               || array_to_string(new_trees, '; '))
                 FROM argus_catalog.migrations WHERE query = %s AND migrated
                ORDER BY migration_id DESC LIMIT 1""", (info.name,)):
        out.append(f"  migrated {at} after run {run}: {trees} ({why})")
    for at, run, migrated, why, old, new, old_ms in conn.execute(
            """SELECT at::timestamp(0), after_run, migrated, why, predicted_old,
                      predicted_new, old_ms
                 FROM argus_catalog.migrations WHERE query = %s AND unchanged_since IS NULL
                ORDER BY migration_id DESC LIMIT 1""", (info.name,)):
        costs = "" if old is None or new is None else (
            f"; predicted row operations per cycle: its tree {old:,.0f}, the best "
            f"alternative {new:,.0f}")
        measured = "" if old_ms is None else f"; its nodes measured {old_ms:,.1f} ms per cycle"
        out.append(f"  last re-planned {at} after run {run}: "
                   f"{'migrated' if migrated else 'kept'} ({why}){costs}{measured}")
    for at, run, why in conn.execute(  # a periodic check since, that planned nothing
            """SELECT at::timestamp(0), after_run, why FROM argus_catalog.migrations m
                WHERE query = %s AND unchanged_since IS NOT NULL
                  AND migration_id > (SELECT max(p.migration_id) FROM argus_catalog.migrations p
                                       WHERE p.query = m.query AND p.unchanged_since IS NULL)
                ORDER BY migration_id DESC LIMIT 1""", (info.name,)):
        out.append(f"  last checked {at} after run {run}: {why}")
    if facts.join_orders:
        out += _joins_measured(conn, facts)
    return out


def _joins_measured(conn: psycopg.Connection, facts: _Facts) -> list[str]:
    """What the query's joins wrote over the last RECENT cycles that ran them: the
    measured side of the order's row operations (each row written to a delta, and
    its history's, once more unless it is the block's top)."""
    cycles, written, ms = conn.execute(
        """WITH r AS (SELECT run_id FROM argus_catalog.runs WHERE status = 'ok'
                       ORDER BY run_id DESC LIMIT %s)
           SELECT count(DISTINCT n.run_id), sum(n.inserted + n.retracted),
                  sum(n.ms + coalesce(n.flush_ms, 0))
             FROM argus_catalog.run_nodes n JOIN r USING (run_id)
            WHERE n.node_id = ANY(%s)""",
        (RECENT, [ref.id for ref in facts.info.nodes
                  if facts.net.nodes[ref.id].kind_of.joins])).fetchone()
    if not cycles:
        return []
    return [f"  measured, its joins over the last {cycles} cycles: {written / cycles:,.0f} "
            f"rows written and {ms / cycles:,.1f} ms per cycle"]


def _node(conn: psycopg.Connection, facts: _Facts, node, code: bool) -> list[str]:
    """One node: what it is, where its rows are, what it computes and costs (and with
    `code`, the SQL it runs)."""
    stream = facts.stream_of.get(node.id)
    path = "insert-only path" if node.insert_only else "signed path (retractions)"
    out = [f"    node {node.id}  {node.kind}" + (f" {stream}" if stream else "")
           + f"  sort ({node.join_level}, {node.sequence_id})"
           + (f"  parents {list(node.parents)}" if node.parents else "")
           + f"  {path}  used by: {', '.join(facts.users.get(node.id, []))}",
           f"      history {node.hist.as_string(conn)}, delta "
           f"{node.delta.as_string(conn)}; columns: {', '.join(node.columns)}"]
    if stream in facts.on_workers and facts.on_workers[stream] is None:
        out.append("      copied to every Citus node (a reference table)")
    elif sharded := node.sharded_by or facts.on_workers.get(stream):
        out.append(f"      sharded by {sharded} over the Citus workers (co-located with "
                   "the histories of as many shards sharded by columns of its type)")
    out += [f"      {line}" for line in describe(node)]
    out += [f"      {line}" for line in _state(conn, facts, node)]
    return out + (_code(conn, facts, node) if code else [])


def _state(conn: psycopg.Connection, facts: _Facts, node) -> list[str]:
    """How the node is built and kept, against what was estimated of it."""
    out = []
    if is_lazy(node):
        (complete,) = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
            done(node))).fetchone() if keys(node) else (0,)
        out.append(f"built lazily (JISC migration): {complete:,} "
                   f"key{'' if complete == 1 else 's'} "
                   f"({', '.join(k for k, _ in keys(node))}) complete; the others are "
                   f"read from its parents when node "
                   f"{node.layout['lazy'].get('consumer')} first probes them")
    if node.id in facts.indexed:
        sources, predset = facts.indexed[node.id]
        stas = ", ".join(f"i{k} = node {s}" for k, s in enumerate(sources, 1))
        out.append(f"computes ({stas}): {predset or 'every row'}")
    out += maintenance(node, facts.last_run.get(node.id))
    if node.id in facts.estimates:
        e = facts.estimates[node.id]
        rate = None if node.layout.get("deferred") else predicted(conn, node.id, e)
        out.append(f"estimated {e['rows']:,.0f} rows, {e['rate']:,.1f} new per cycle; "
                   f"measured {e['hist_rows']:,} rows" + (
                       "" if rate is None else f", {rate[1]:,.1f} new per cycle (estimated "
                       f"{rate[0]:,.1f} for the cycles' new input rows)"))
    if node.id in facts.proposed:
        p = facts.proposed[node.id]
        saves = ", ".join(what for what in (
            None if p.mib is None else f"frees {p.mib:,.1f} MiB",
            None if p.ms is None else f"saves {p.ms:,.1f} ms per cycle") if what)
        out.append(f"layout today (argus optimize --dry-run): {p.change}, {p.why}"
                   + (f"; {saves}" if saves else ""))
    return out


def _code(conn: psycopg.Connection, facts: _Facts, node) -> list[str]:
    """The SQL the node runs in a cycle, and at its end."""
    cycle_block, flush_block = facts.blocks[node.id]
    out = []
    if node.loaded:
        out.append("      cycle code (claim; one statement for all streams):")
        out.append(_indented(conn, claim([(facts.stream_of[node.id], node, None)])))
    elif cycle_block is not None:
        out.append("      cycle code (in argus_net.cycle_program; runs when a parent's "
                   "delta has rows):")
        out.append(textwrap.indent(textwrap.dedent(cycle_block), "        "))
    if flush_block is not None:
        out.append("      flush code (end of cycle):")
        out.append(textwrap.indent(textwrap.dedent(flush_block), "        "))
    return out
