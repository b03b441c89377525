"""Node → SQL: one compiler per node kind, one dispatch table (`COMPILERS`).

A compiler turns a node of the network (and its parents) into the statements that
create its tables, backfill it at registration, fill its delta in a cycle and flush the
delta into its history. `program` assembles every node's cycle code into the body of
one PL/pgSQL function. Pure: SQL is built from sql_templates/, nothing runs here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from psycopg import sql

from .names import SIGN, node_delta, std_alias, stream_inbox
from .templates import render


@dataclass(frozen=True)
class Node:
    id: int
    kind: str
    join_level: int
    sequence_id: int
    parents: tuple[int, ...]
    columns: tuple[str, ...]
    exprs: tuple[str, ...]  # how each column is computed, over the parents' t1, t2, …
    hist: sql.Identifier
    definition: dict = field(default_factory=dict, compare=False)
    insert_only: bool = True

    @property
    def delta(self) -> sql.Identifier:
        return node_delta(self.id)

    @property
    def column_list(self) -> sql.Composed:
        return sql.SQL(", ").join(map(sql.Identifier, self.columns))

    @property
    def expr_list(self) -> sql.Composed:
        return sql.SQL(", ").join(map(sql.SQL, self.exprs))

    @property
    def named_expr_list(self) -> sql.Composed:
        return sql.SQL(", ").join(sql.SQL("{} AS {}").format(sql.SQL(e), sql.Identifier(c))
                                  for e, c in zip(self.exprs, self.columns))


T1 = sql.Identifier(std_alias(1))
SIGN_ID = sql.Identifier(SIGN)


class Compiler(Protocol):
    def create(self, node: Node, parents: list[Node]) -> list[sql.Composed]: ...

    def backfill(self, node: Node, parents: list[Node]) -> sql.Composed | None: ...

    def delta(self, node: Node, parents: list[Node]) -> sql.Composed | None: ...


def create_delta(node: Node) -> sql.Composed:
    return render("node/create_delta", delta=node.delta, hist=node.hist, sign=SIGN_ID)


def flush(node: Node) -> sql.Composed:
    """Merge the node's delta into its history at the end of a cycle."""
    return render("node/flush_insert_only", hist=node.hist, delta=node.delta,
                  columns=node.column_list)


class StreamCompiler:
    """A stream's source node: its delta is filled by the cycle's claim statement."""

    def create(self, node: Node, parents: list[Node]) -> list[sql.Composed]:
        return [create_delta(node)]

    def backfill(self, node: Node, parents: list[Node]) -> None:
        return None

    def delta(self, node: Node, parents: list[Node]) -> None:
        return None


def claim(streams: list[tuple[str, Node]]) -> sql.Composed:
    """One statement that claims every stream's inbox under one snapshot, so a load that
    wrote to several streams in one transaction is claimed whole by one cycle."""
    parts, counts = [], []
    for i, (name, node) in enumerate(streams):
        claimed = sql.Identifier(f"claimed_{i}")
        parts.append(render("stream/claim", claimed=claimed, moved=sql.Identifier(f"moved_{i}"),
                            inbox=stream_inbox(name), delta=node.delta,
                            columns=node.column_list, sign=SIGN_ID))
        counts.append(sql.SQL("(SELECT count(*) FROM {})").format(claimed))
    return sql.SQL("WITH {} SELECT {}").format(sql.SQL(",\n").join(parts),
                                               sql.SQL(", ").join(counts))


class SelectCompiler:
    def _slots(self, node: Node) -> dict[str, sql.Composable]:
        return {"columns": node.column_list, "exprs": node.expr_list, "t1": T1,
                "predicate": sql.SQL(node.definition["predicate"]), "sign": SIGN_ID}

    def create(self, node: Node, parents: list[Node]) -> list[sql.Composed]:
        return [render("select/create", hist=node.hist, named_exprs=node.named_expr_list,
                       parent_hist=parents[0].hist, t1=T1),
                create_delta(node)]

    def backfill(self, node: Node, parents: list[Node]) -> sql.Composed:
        return render("select/backfill", hist=node.hist, parent_hist=parents[0].hist,
                      **self._slots(node))

    def delta(self, node: Node, parents: list[Node]) -> sql.Composed:
        return render("select/delta", delta=node.delta, parent_delta=parents[0].delta,
                      **self._slots(node))


COMPILERS: dict[str, Compiler] = {
    "stream": StreamCompiler(),
    "select": SelectCompiler(),
}


# -- the assembled cycle program ---------------------------------------------------

def var(node_id: int) -> sql.SQL:
    """The program variable holding the rows node `node_id` wrote to its delta."""
    return sql.SQL(f"argus_n{int(node_id)}")


def node_block(node: Node, parents: list[Node]) -> sql.Composed | None:
    statement = COMPILERS[node.kind].delta(node, parents)
    if statement is None:
        return None
    condition = sql.SQL(" OR ").join(sql.SQL("{} > 0").format(var(p.id)) for p in parents)
    return render("program/node_block", condition=condition, statement=statement,
                  var=var(node.id), id=sql.Literal(node.id))


def flush_block(node: Node) -> sql.Composed:
    return render("program/flush_block", var=var(node.id), statement=flush(node))


def program(streams: list[tuple[str, Node]], node_ids: list[int],
            blocks: list[sql.Composable], flushes: list[sql.Composable]) -> sql.Composed:
    """The body of argus_net.cycle_program(argus_run): claim, evaluate, flush."""
    declarations = sql.SQL("\n").join(sql.SQL("    {} bigint := 0;").format(var(i))
                                       for i in node_ids)
    claim_code = sql.SQL("")
    if streams:
        claim_code = render("program/claim_block", claim=claim(streams),
                            vars=sql.SQL(", ").join(var(n.id) for _, n in streams),
                            ids=sql.SQL(", ").join(sql.Literal(n.id) for _, n in streams),
                            count=sql.Literal(len(streams)))
    return render("program/cycle_program", declarations=declarations, claim=claim_code,
                  evaluate=sql.SQL("\n").join(blocks), flush=sql.SQL("\n").join(flushes))
