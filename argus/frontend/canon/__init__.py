"""Canonical predicates (ARGUS §5.1.1): a condition as a PredSet — a set of OR-clauses
of literal predicates (CNF) — where equivalent literals written differently are equal
values, and implication between literals, clauses and PredSets (subsumption, §5.1.3).

A literal is a linear form `Σ coef·atom  op  constant`, normalized so that its atoms
are sorted and the first has coefficient 1: `amount > 10`, `10 < amount`,
`NOT (amount <= 10)` and `amount - 10 > 0` are the same `Literal`. Terms are moved
across the comparison only where PostgreSQL's arithmetic is exact (integers, numeric,
dates; timestamps with fixed-length intervals), so two equal literals are true for the
same rows. Elsewhere (floats, text, functions) a comparison is only put in a standard
orientation; anything else is an opaque literal, equal only to itself.

Constants are compared as PostgreSQL values of the type PostgreSQL compares them in,
never as the text the user wrote: `d = '2024-1-5'` and `d = DATE '2024-01-05'` are one
literal, `x = 0.1000000000000000001` on a float column is `x = 0.1`. What only
PostgreSQL knows (how it reads a string literal or a cast, the type of an expression)
comes from a `Resolve` function the caller backs with the server (`argus.frontend.constants`);
without one, such constants are equal only to the same text and imply nothing.

Atoms name columns of instances as `"i1"."amount"`: instance numbers are the Standard
Table Aliases of §5.1.2, renumbered by `Literal.mapped` when a node's STAs are matched
against a query's. Pure: no database access.
"""

from __future__ import annotations

from .cnf import canonicalize
from .implication import (Exact, clause_implies, eliminate, exact_atoms, implies,
                          predset_implies, relation)
from .literals import (COMPARISONS, FLIP, INSTANCE, MAX_CLAUSES, NEGATE, Clause, Literal,
                       PredSet, Resolve, TypeOf, atom_column, atom_instances, clause_text,
                       column_atom, map_atom, map_clause, predset_text)
from .sargable import sargable
from .values import FLOATS, TEXT_EQUAL, Const, float_text

__all__ = ["COMPARISONS", "Clause", "Const", "Exact", "FLIP", "FLOATS", "INSTANCE",
           "Literal", "MAX_CLAUSES", "NEGATE", "PredSet", "Resolve", "TEXT_EQUAL", "TypeOf",
           "atom_column", "atom_instances", "canonicalize", "clause_implies", "clause_text",
           "column_atom", "eliminate", "exact_atoms", "float_text", "implies", "map_atom",
           "map_clause", "predset_implies", "predset_text", "relation", "sargable"]
