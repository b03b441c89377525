"""Lazily built joins (JISC, Aly et al. 2014): the code a migration's new inner joins
run while their states are incomplete. Pure: argus.network.jisc makes and finishes them.

A lazy join starts with an empty history. Its one consumer, an inner equi-join, probes
it by a key; before a cycle's new rows of the consumer's other input probe it, the keys
they probe are completed — marked in `done` and their rows read from `full`, the join
of its parents' histories, which a cycle's statements see as they were before it — so
every probe reads a complete key. Its own new rows go into its history only for complete
keys; a key completed later reads them from its parents' histories. So both the insert
and the probe touch complete keys only (the paper leaves the insert case implicit).
"""

from __future__ import annotations

import dataclasses

from psycopg import sql

from ..templates import render
from .base import NETWORK, Node, Step, all_rows, cols, var


def is_lazy(node: Node) -> bool:
    return "lazy" in node.layout


def keys(node: Node) -> list[tuple[str, str]]:
    """(its column, the consumer's other input's column) per equality the consumer
    probes it by; [] while its consumer is not settled."""
    return [tuple(k) for k in node.layout.get("lazy", {}).get("keys", [])]


def full(node: Node) -> sql.Identifier:
    return sql.Identifier(*_full_ref(node))


def _full_ref(node: Node) -> tuple[str, str]:
    return NETWORK, f"n{node.id}_full"


def done(node: Node) -> sql.Identifier:
    return node.aux("done")


def readable(node: Node) -> Node:
    """The node as a statement that needs its whole history reads it: a lazy join
    through its `full` view."""
    if not is_lazy(node):
        return node
    return dataclasses.replace(node, hist_ref=_full_ref(node))


def _match(node: Node, a: str, b: str) -> sql.Composed:
    return sql.SQL(" AND ").join(sql.SQL("{} = {}").format(sql.Identifier(a, k),
                                                           sql.Identifier(b, k))
                                 for k, _ in keys(node))


def completions(node: Node, parents: list[Node]) -> list[Step]:
    """A consumer's completion of its lazy inputs, before its statements read them:
    each lazy input settled on this consumer, for the keys the other input's new rows
    probe."""
    if node.kind != "join" or len(parents) != 2:
        return []
    steps = []
    for lazy, other in (parents, parents[::-1]):
        if not is_lazy(lazy) or lazy.layout["lazy"].get("consumer") != node.id:
            continue
        mine = [k for k, _ in keys(lazy)]
        probe = [o for _, o in keys(lazy)]
        steps.append(Step(render(
            "lazy/complete", done=done(lazy), keys=cols(mine), probe_keys=cols(probe, "o"),
            probe=other.delta, hist=lazy.hist, columns=lazy.column_list,
            f_columns=cols(lazy.columns, "f"), full=full(lazy), f_keys=cols(mine, "f"),
            not_null=sql.SQL(" AND ").join(sql.SQL("{} IS NOT NULL").format(
                sql.Identifier("o", o)) for o in probe)), all_rows(other)))
    return steps


def flush(node: Node) -> Step:
    return Step(render("lazy/flush", hist=node.hist, columns=node.column_list,
                       d_columns=cols(node.columns, "d"), delta=node.delta,
                       done=done(node), match=_match(node, "k", "d")),
                sql.SQL("{} > 0").format(var(node.id)), dynamic=False)


def finish(node: Node) -> sql.Composed:
    """Fill in every key not complete yet (all of them, if its consumer never settled)."""
    if not keys(node):
        return sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(
            node.hist, node.column_list, node.column_list, full(node))
    return render("lazy/finish", hist=node.hist, columns=node.column_list,
                  f_columns=cols(node.columns, "f"), full=full(node), done=done(node),
                  match=_match(node, "k", "f"))


def create_done(node: Node) -> list[sql.Composed]:
    mine = cols([k for k, _ in keys(node)])
    return [render("lazy/create_done", done=done(node), keys=mine, hist=node.hist),
            sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(done(node), mine)]
