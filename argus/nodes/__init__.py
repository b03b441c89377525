"""Node kinds, one module each (stream, select, join, aggregate, distinct, setop, window,
rerun, recursive), with
the SQL templates of sql_templates/<kind>/: a kind's compiler turns a node of the network
(and its parents) into the statements that create its tables, backfill it at
registration, fill its delta in a cycle and flush the delta into its history. Cycle
statements are `Step`s: a statement, the PL/pgSQL condition under which it runs (which
deltas must have rows) and whether it is planned at run time (EXECUTE: joins and
lookups, whose best plan depends on the delta's size) or once (static: a scan of one
delta). Pure: SQL is built from sql_templates/, nothing runs here.
"""

from __future__ import annotations

from . import (aggregate, distinct, join, recursive, rerun, select, setop,  # each registers
               stream, window)  # its kind
from .base import (CODE_VERSION, KINDS, LAYOUT, SIGN_ID, T1, T2, Compiler, Kind, Node, Step,
                   delta_view, signature, virtual)

assert set(KINDS) == {m.KIND.name for m in (aggregate, distinct, join, recursive, rerun,
                                                 select, setop, stream, window)}
COMPILERS: dict[str, Compiler] = {name: kind.compiler for name, kind in KINDS.items()}
# the names of the kinds with a trait, for SQL over the catalog's nodes (kind = ANY(%s))
LOADED, SELECTS, JOINS = ([name for name, kind in KINDS.items() if getattr(kind, trait)]
                          for trait in ("loaded", "selects", "joins"))

__all__ = ["CODE_VERSION", "COMPILERS", "JOINS", "KINDS", "LAYOUT", "LOADED", "SELECTS",
           "SIGN_ID", "T1", "T2", "Compiler", "Kind", "Node", "Step", "delta_view", "signature",
           "virtual"]
