"""`argus optimize --dry-run`: the layout decisions of registration (network.builder:
which nodes keep a table) taken again on the network as the cycles left it, and what
changing them would save. Nothing changes: moving a live node between a table and a
view is run-time migration (issue 21). The decisions read what the catalog already
knows — each node's rows (node_stats), the last cycles' timings (run_nodes), the
tables' sizes — and PostgreSQL's estimates for selections, as registration does.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import psycopg

from .network import Builder, load, network_bytes
from .network.reads import observed_rates
from .network.layout_policy import may_be_view
from .nodes import virtual
from .settings import pinned_session

RECENT = 10  # the last cycles whose timings say what a node's upkeep costs


@dataclass(frozen=True)
class Proposal:
    node: int | None  # None: the network as a whole
    kind: str
    change: str
    why: str
    mib: float | None = None  # the state it would free
    ms: float | None = None  # the time per cycle it would save (recent cycles' mean)


def proposals(conn: psycopg.Connection, only: set[int] | None = None) -> list[Proposal]:
    """Where registration would decide otherwise today; `only`: for these nodes alone
    (one query's, for `explain`: a selection's decision asks PostgreSQL for an
    estimate, which runs the selectivity functions of its operators: named as cycles
    resolve them, settings.pinned_session)."""
    with conn.transaction(), pinned_session(conn):
        return _proposals(conn, only)


def _proposals(conn: psycopg.Connection, only: set[int] | None) -> list[Proposal]:
    layout, growth, budget = conn.execute(
        "SELECT layout, virtual_join_growth, state_budget FROM argus_catalog.settings"
    ).fetchone()
    out = []
    used = network_bytes(conn) if budget is not None and only is None else 0
    if budget is not None and used > budget:
        out.append(Proposal(None, "network", "over budget",
                            f"its tables hold {used / 2**20:,.1f} MiB, over "
                            f"state_budget ({budget / 2**20:,.1f} MiB)"))
    if layout != "cost":
        return out
    rows = dict(conn.execute("SELECT node_id, hist_rows FROM argus_catalog.node_stats"))
    recent = {n: (ms, flush_ms) for n, ms, flush_ms in conn.execute(
        """SELECT node_id, avg(ms), avg(flush_ms) FROM argus_catalog.run_nodes
            WHERE run_id > (SELECT coalesce(max(run_id), 0) - %s FROM argus_catalog.runs)
            GROUP BY node_id""", (RECENT,))}
    consumed = {r[0] for r in conn.execute("SELECT parent_id FROM argus_catalog.edges")}
    builder = Builder(conn)
    net = load(conn)
    for node in net.nodes.values():
        if only is not None and node.id not in only:
            continue
        if node.kind_of.joins and virtual(node) and node.layout.get("deferred") is False \
                and node.id not in consumed:
            out.append(Proposal(node.id, node.kind, "changes → deferred",
                                "no node consumes its delta any more (only a query's "
                                "changes view)", None, recent.get(node.id, (None,))[0]))
        if virtual(node) or not (node.kind_of.joins or node.kind_of.selects):
            continue
        parents = [net.nodes[p] for p in node.parents]
        if node.kind_of.joins:
            inputs = sum(rows[p.id] for p in parents)
            if not (growth is not None and node.insert_only
                    and may_be_view(node.definition, node.exprs, parents)
                    and rows[node.id] > growth * inputs):
                continue
            why = (f"{rows[node.id]:,} rows, {rows[node.id] / max(inputs, 1):,.1f}× its "
                   f"inputs' (more than virtual_join_growth, {growth:g})")
        elif builder.view_of_stream(parents[0], node.definition, node.layout, node.exprs):
            why = ("passes more than virtual_selectivity of its stream's rows, by "
                   "PostgreSQL's estimate")
        else:
            continue
        (size,) = conn.execute("SELECT pg_total_relation_size(%s::regclass)",
                               (node.hist.as_string(conn),)).fetchone()
        out.append(Proposal(node.id, node.kind, "table → view", why, size / 2**20,
                            recent.get(node.id, (None, None))[1]))
    return out


def predicted(conn: psycopg.Connection, node_id: int, estimate: dict
              ) -> tuple[float, float] | None:
    """A node's new rows per cycle as its estimate predicts them for the inputs the
    cycles since brought (its estimated rows per new input row, times those), and as
    the cycles measured them; None before any cycle, or with no input."""
    sources = [int(s) for s in estimate.get("inflow", {})]
    rates = observed_rates(conn, node_id, [node_id, *sources])
    inflow = sum(rates[s] or 0.0 for s in sources)
    expected = sum(estimate["inflow"].values())
    if rates[node_id] is None or inflow <= 0 or expected <= 0:
        return None
    return estimate["rate"] / expected * inflow, rates[node_id]


@dataclass(frozen=True)
class Accuracy:
    """How the join order's estimates (network.builder: nodes.estimate) compare with what
    the cycles measured, for the nodes of one kind: medians of measured / estimated,
    and the share of nodes within a factor of 2 (+1 on both sides: an estimate of 0.02
    new rows against none measured is right enough). New rows per cycle: as predicted
    for the inputs the cycles brought (`predicted`), not for those registration
    guessed."""

    kind: str
    nodes: int
    rows: float
    rows_within_2x: float
    rate: float | None  # None: no cycle ran since they were made
    rate_within_2x: float | None


def accuracy(conn: psycopg.Connection) -> list[Accuracy]:
    kinds: dict[str, list[tuple[float, float | None]]] = {}
    for node_id, kind, estimate, rows, deferred in conn.execute(
            """SELECT n.node_id, n.kind, n.estimate, s.hist_rows,
                      coalesce((n.layout->>'deferred')::boolean, false)
                 FROM argus_catalog.nodes n JOIN argus_catalog.node_stats s USING (node_id)
                WHERE n.estimate IS NOT NULL ORDER BY n.node_id""").fetchall():
        rate = None if deferred else predicted(conn, node_id, estimate)  # (not run)
        kinds.setdefault(kind, []).append((
            (rows + 1) / (estimate["rows"] + 1),
            None if rate is None else (rate[1] + 1) / (rate[0] + 1)))
    out = []
    for kind, ratios in sorted(kinds.items()):
        rows = [r for r, _ in ratios]
        rates = [r for _, r in ratios if r is not None]
        out.append(Accuracy(kind, len(ratios), statistics.median(rows), _within(rows),
                            statistics.median(rates) if rates else None,
                            _within(rates) if rates else None))
    return out


def _within(ratios: list[float], factor: float = 2.0) -> float:
    return sum(1 / factor <= r <= factor for r in ratios) / len(ratios)
