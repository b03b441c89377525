"""Adapting at run time (issue 21): plan a registered query's joins again on what the
cycles observed, and migrate the live network to the new layout.

Moving State (Zhu 2006), between two cycles, in one transaction holding the cycle
lock: the query is built again as registration builds it — its new nodes filled from
the states that exist (its parents' histories, shared nodes) — its views are switched
to the new top node, and the nodes only it used are dropped. Nodes other queries use
are untouched. The last cycle's changes, which the replaced nodes held, are kept in a
table the changes view reads until the next cycle, so that answers and changes are
exact throughout. A failed migration rolls back whole: the old layout keeps working.
"""

from __future__ import annotations

from .decide import migrate, optimize
from .periodic import reoptimize, replan_triggered
from .records import Decision

__all__ = ["Decision", "migrate", "optimize", "reoptimize", "replan_triggered"]
