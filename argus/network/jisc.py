"""JISC migration (issue 21): a migration's new inner joins built lazily, and made whole
when something needs their whole history (argus.nodes.lazy has their cycle code).

A builder in lazy mode creates each new insert-only inner join empty, with a `full`
view of its parents' join; `settle` then keeps it lazy if its one consumer is an inner
equi-join that probes it by columns of the same types as its other input's, and
finishes the rest. Lazy joins are hidden from sharing (not findable by their signature, no
index candidates), so no other query reads their partial histories; anything else that would
read one whole (a second consumer, an enrichment, `argus retry`) finishes it first. Its
own query planned again costs it as its own node, found by its signature.
"""

from __future__ import annotations


import psycopg
from psycopg import sql
from sqlglot import exp

from ..nodes import T1, T2, Node, lazy
from ..nodes.join import join_condition
from ..templates import render
from ..trees import conjuncts, tree_of
from .reads import has_twin, load_node
from . import records
from .stored import execute_all, store_blocks


def create_full(conn: psycopg.Connection, node: Node, parents: list[Node]) -> None:
    """The view of the join of its parents' (complete) histories."""
    left, right = map(lazy.readable, parents)
    conn.execute(render("join/create_view", view=lazy.full(node),
                        named_exprs=node.named_expr_list, t1=T1, t2=T2,
                        left=left.hist, right=right.hist,
                        condition=sql.SQL(join_condition(node, parents))))


def probe_keys(consumer: Node, node: Node, parents: list[Node]) -> list[list[str]]:
    """(node's column, other input's column) for each equality of the consumer's inner
    join condition between two plain columns of the same type; [] if the consumer is
    not an inner insert-only join reading the node once."""
    if (not consumer.kind_of.inner_join(consumer) or not consumer.insert_only
            or [p.id for p in parents].count(node.id) != 1):
        return []
    side = "t1" if parents[0].id == node.id else "t2"
    other = parents[1] if side == "t1" else parents[0]
    mine_types = dict(zip(node.columns, node.types))
    other_types = dict(zip(other.columns, other.types))
    pairs = []
    for term in conjuncts(tree_of(consumer.spec.condition)):
        if not (isinstance(term, exp.EQ) and isinstance(term.left, exp.Column)
                and isinstance(term.right, exp.Column)):
            continue
        ends = {term.left.table: term.left.name, term.right.table: term.right.name}
        if set(ends) != {"t1", "t2"}:
            continue
        mine, theirs = ends[side], ends["t2" if side == "t1" else "t1"]
        if (mine in mine_types and mine_types[mine] == other_types.get(theirs)
                and mine not in (m for m, _ in pairs)):  # (one probe column per key column)
            pairs.append([mine, theirs])
    return pairs


def settle(builder) -> list[int]:
    """After a lazy build: keep lazy the joins whose consumer can complete them, finish
    the others. The ids kept lazy."""
    conn, kept = builder.conn, []
    for node_id in sorted(builder.pending_lazy):
        builder.forget()
        node = builder.load(node_id)
        if not lazy.is_lazy(node):
            continue  # (finished with an ancestor)
        children = [r[0] for r in conn.execute(
            "SELECT child_id FROM argus_catalog.edges WHERE parent_id = %s", (node_id,))]
        pairs = []
        if len(children) == 1:
            consumer = builder.load(children[0])
            pairs = probe_keys(consumer, node, [builder.load(p) for p in consumer.parents])
        if not pairs:
            finish(conn, [node_id])
            continue
        layout = {**node.layout,
                  "lazy": {**node.layout["lazy"], "consumer": consumer.id, "keys": pairs}}
        origin = builder.origin(node, [k for k, _ in pairs])
        if origin is not None:  # what a completion looks its keys up in
            layout["indexes"] = [*(layout.get("indexes") or []),
                                 [origin[0].hist_ref[0], builder.index_of(*origin)]]
        records.set_layout(conn, node_id, layout)
        builder.forget()
        node = builder.load(node_id)
        execute_all(conn, lazy.create_done(node))
        for n in (node, builder.load(consumer.id)):
            store_blocks(conn, n, [builder.load(p) for p in n.parents])
            builder.compiled.add(n.id)
        kept.append(node_id)
    builder.pending_lazy.clear()
    builder.forget()
    return kept


def of_query(conn: psycopg.Connection, query_id: int) -> list[int]:
    return [r[0] for r in conn.execute(
        """SELECT q.node_id FROM argus_catalog.query_nodes q
             JOIN argus_catalog.nodes n USING (node_id)
            WHERE q.query_id = %s AND n.layout ? 'lazy'""", (query_id,))]


def finish(conn: psycopg.Connection, node_ids: list[int]) -> list[int]:
    """Make these lazy joins, and the lazy joins built over them, whole: every key not
    complete yet filled in from their parents' histories, their flags, views and key
    tables gone, their own and their consumers' code compiled again, the program left
    to be assembled. The ids finished."""
    todo, seen = list(node_ids), set()
    while todo:
        node_id = todo.pop()
        if node_id in seen:
            continue
        seen.add(node_id)
        todo += [r[0] for r in conn.execute(
            """SELECT e.child_id FROM argus_catalog.edges e
                 JOIN argus_catalog.nodes n ON n.node_id = e.child_id
                WHERE e.parent_id = %s AND n.layout ? 'lazy'""", (node_id,))]
    nodes = [n for n in map(lambda i: load_node(conn, i), seen) if lazy.is_lazy(n)]
    if not nodes:
        return []
    for node in nodes:  # (every full view still there)
        conn.execute(lazy.finish(node))
    for node in sorted(nodes, key=lambda n: (n.join_level, n.sequence_id), reverse=True):
        conn.execute(sql.SQL("DROP VIEW {}").format(lazy.full(node)))
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(lazy.done(node)))
        layout = {k: v for k, v in node.layout.items() if k != "lazy"}
        # (found by its signature now, unless an equal node was made meanwhile)
        records.set_layout(conn, node.id, layout, findable=not has_twin(conn, node.id))
        conn.execute(sql.SQL("ANALYZE {}").format(node.hist))
        records.count_rows(conn, node)
    ids = [n.id for n in nodes]
    recompile = set(ids) | {r[0] for r in conn.execute(
        "SELECT child_id FROM argus_catalog.edges WHERE parent_id = ANY(%s)", (ids,))}
    for node_id in sorted(recompile):
        node = load_node(conn, node_id)
        store_blocks(conn, node, [load_node(conn, p) for p in node.parents])
    conn.execute("UPDATE argus_catalog.program_state SET program_stale = true")
    return ids

