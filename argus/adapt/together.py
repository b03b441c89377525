"""Queries that share joins, planned again as one (issue 52): priced for all their
users, moved together, or parted where their best trees differ."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import psycopg

from ..frontend.analyze import Analyzed
from ..mqo.replan import Prediction, Replan, changes, decide, predict, total
from ..mqo.sharing import Sharing
from ..nodes import JOINS
from .move import build, move, read_again
from .records import Decision, log_migration, only_used_by, recheck


@dataclass(frozen=True)
class _Member:
    """A query planned again with others that share its joins."""

    name: str
    query_id: int
    sql: str
    canonical: str
    schemas: dict | None
    old_top: int
    sharing: Sharing
    uses: frozenset[int]


def sharers(conn: psycopg.Connection, query_id: int) -> list[_Member]:
    """This query, then the incremental, running ones sharing a join node with it."""
    return [_Member(name, qid, text, canonical, schemas, top,
                    Sharing(shared_as, join_sharing=joins), frozenset(uses))
            for name, qid, text, canonical, schemas, top, shared_as, joins, uses in conn.execute(
                """SELECT q.name, q.query_id, q.sql, q.canonical, q.functions, q.output_node,
                          q.sharing, q.join_sharing,
                          ARRAY(SELECT u.node_id FROM argus_catalog.query_nodes u
                                 WHERE u.query_id = q.query_id)
                     FROM argus_catalog.queries q
                    WHERE q.status = 'ok' AND q.evaluate = 'incremental'
                      AND q.join_orders IS NOT NULL
                      AND (q.query_id = %(q)s OR EXISTS (
                          SELECT FROM argus_catalog.query_nodes mine
                            JOIN argus_catalog.nodes n
                                 ON n.node_id = mine.node_id AND n.kind = ANY(%(joins)s)
                            JOIN argus_catalog.query_nodes o ON o.node_id = mine.node_id
                           WHERE mine.query_id = %(q)s AND o.query_id = q.query_id))
                    ORDER BY q.query_id <> %(q)s, q.name""",
                {"q": query_id, "joins": JOINS})]


def planned_together(conn: psycopg.Connection, members: list[_Member], analyzed: Analyzed,
                     apply: bool, trigger: str | None, settings: tuple) -> Decision:
    """Queries sharing joins, planned again as one: a join they share is free to each
    alone (its upkeep serves the others), so none leaves it however costly it became.
    Priced for all of them — each node they alone use paid once, by the first that
    builds it; the others reuse it for free — they migrate together (in this
    transaction: all or none), or those whose best trees differ part, the node staying
    with the queries that still want it."""
    last_run, strategy, min_gain, horizon, growth = settings
    first = members[0]
    hidden = only_used_by(conn, [m.query_id for m in members])
    texts = {first.name: analyzed} | {m.name: read_again(conn, m.sql, m.canonical, m.schemas)
                                      for m in members[1:]}
    kept, best, members = _priced(conn, _answers_first(members), texts, hidden, growth)
    both = total([kept[m.name] for m in members], [best[m.name] for m in members])
    go, reason, wait = decide(both, min_gain, horizon)
    waiting, then = recheck(conn, first.name, wait and apply, last_run)
    reason += then

    def why(m: _Member) -> str:
        others = ", ".join(o.name for o in members if o != m)
        stays = "" if changes(kept[m.name], best[m.name]) else \
            "its trees stay, at the same cost, and are not in the sums; "
        return f"together with {others}, which share its joins: {stays}{reason}"

    log = {"after_run": last_run, "strategy": strategy, "forced": False, "triggered": trigger,
           **waiting}
    decision = Decision(first.name, both, go, why(first))
    if not apply:
        return decision
    if not go:  # (each member's decision: the periodic check plans none of them again)
        logged = [log_migration(conn, query=m.name, migrated=False, why=why(m), **log,
                                **_predicted(kept, best, m), old_nodes=sorted(hidden & m.uses))
                  for m in members]
        return dataclasses.replace(decision, migration_id=logged[0])
    fresh, decision = set(), dataclasses.replace(decision, migrated=False)  # (its trees stay)
    for m in members:
        if not best[m.name].trees:  # its trees stay: it keeps its nodes, for the others too
            fresh |= m.uses & hidden
            continue
        moved = move(conn, m.name, m.query_id, texts[m.name], m.sharing, m.old_top,
                     best[m.name], why(m), {"query": m.name, **log, **_predicted(kept, best, m),
                                            "old_nodes": sorted(hidden & m.uses)},
                     Replan(hidden, m.uses, "best", growth, frozenset(fresh)), "incremental",
                     strategy)
        decision = moved if m == first else decision
        fresh |= {n for (n,) in conn.execute("SELECT node_id FROM argus_catalog.query_nodes "
                                             "WHERE query_id = %s", (m.query_id,))} - m.uses
    return decision


def _answers_first(members: list[_Member]) -> list[_Member]:
    """The members in the order they are priced: those whose answer another member's
    tree reads first (then as they came). The layout they have is priced node by node,
    each paid by its first user, and a join is priced by the block that plans it: as a
    query's answer its upkeep is that query's alone, as an inner join of another
    query's tree it is priced within that block, differently, and the decision hung on
    which query was planned first: on the queries' names (docs/adapt.md)."""
    def read_by_others(m: _Member) -> bool:
        return any(m.old_top in o.uses for o in members if o is not m)
    return sorted(members, key=lambda m: not read_by_others(m))


def _priced(conn: psycopg.Connection, members: list[_Member], texts: dict[str, Analyzed],
            hidden: frozenset[int], growth: float | None
            ) -> tuple[dict[str, Prediction], dict[str, Prediction], list[_Member]]:
    """Each member's prediction for the layout they have (each node paid by its first
    user) and for the best one (each node paid by the first whose best tree has it,
    built or kept), both built and rolled back; and the order to move them in: a
    member that gave columns to a node an earlier one built goes first, so that the
    node is filled once, with them (a node given columns is filled again)."""
    kept, best = {}, {}
    with conn.transaction(force_rollback=True):
        paid: set[int] = set()
        waiting: dict = {}  # (nodes a member made empty, filled if another reads them)
        for m in members:
            replan = Replan(hidden - paid, m.uses, "keep", growth)
            build(conn, m.name, texts[m.name], m.sharing, replan, "incremental",
                  predicting=waiting)
            kept[m.name], paid = predict(replan.choices), paid | (m.uses & hidden)
    with conn.transaction(force_rollback=True):
        fresh: set[int] = set()
        keeping: set[int] = set()  # (nodes an earlier member's best tree keeps)
        waiting = {}
        widening = []  # (members that gave earlier ones' nodes columns)
        for m in members:
            replan = Replan(hidden - keeping, m.uses, "best", growth, frozenset(fresh))
            builder, top, _ = build(conn, m.name, texts[m.name], m.sharing, replan,
                                     "incremental", predicting=waiting)
            best[m.name] = predict(replan.choices)
            if builder.enriched & fresh:
                widening.append(m)
            tree = {n for n, _ in builder.ancestors(top.id)}
            conn.execute("INSERT INTO argus_catalog.query_nodes SELECT %s, unnest(%s::bigint[])",
                         (m.query_id, sorted(tree - m.uses)))  # (in use: the next one finds them)
            fresh |= tree - m.uses
            keeping |= tree & hidden  # (paid by it: shared with the next, as moving treats them)
    return kept, best, widening + [m for m in members if m not in widening]


def _predicted(kept: dict[str, Prediction], best: dict[str, Prediction], m: _Member) -> dict:
    mine = best[m.name]
    return {"predicted_old": kept[m.name].current, "predicted_new": mine.best,
            "build_rows": mine.build, "old_trees": [t[0] for t in mine.trees],
            "new_trees": [t[1] for t in mine.trees]}
