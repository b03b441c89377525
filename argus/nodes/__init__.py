"""Node kinds, one module each (stream, select, join, aggregate, distinct, setop), with
the SQL templates of sql_templates/<kind>/: a kind's compiler turns a node of the network
(and its parents) into the statements that create its tables, backfill it at
registration, fill its delta in a cycle and flush the delta into its history. Cycle
statements are `Step`s: a statement, the PL/pgSQL condition under which it runs (which
deltas must have rows) and whether it is planned at run time (EXECUTE: joins and
lookups, whose best plan depends on the delta's size) or once (static: a scan of one
delta). Pure: SQL is built from sql_templates/, nothing runs here.
"""

from __future__ import annotations

from .aggregate import AggregateCompiler
from .base import CODE_VERSION, T1, T2, SIGN_ID, Compiler, Node, Step, virtual
from .distinct import DistinctCompiler
from .join import JoinCompiler
from .select import SelectCompiler
from .setop import SetOpCompiler
from .stream import StreamCompiler

COMPILERS: dict[str, Compiler] = {
    "stream": StreamCompiler(),
    "select": SelectCompiler(),
    "join": JoinCompiler(),
    "aggregate": AggregateCompiler(),
    "distinct": DistinctCompiler(),
    "setop": SetOpCompiler(),
}

__all__ = ["CODE_VERSION", "COMPILERS", "SIGN_ID", "T1", "T2", "Compiler", "Node", "Step",
           "virtual"]
