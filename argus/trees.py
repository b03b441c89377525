"""sqlglot trees as argus reads them: one dialect, and a condition's conjuncts."""

from __future__ import annotations

from sqlglot import exp

DIALECT = "postgres"  # every parse and every generated SQL text


def qualified(table: str, column: str) -> str:
    """`"table"."column"`, quoted as PostgreSQL reads it (SQL text over a node's inputs)."""
    return exp.column(column, table=table, quoted=True).sql(DIALECT)


def unparen(e: exp.Expr) -> exp.Expr:
    """The expression inside any parentheses around it."""
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    """The terms of a condition's top-level ANDs, parentheses removed ([] for none)."""
    if condition is None:
        return []
    condition = unparen(condition)
    if isinstance(condition, exp.And):
        return conjuncts(condition.left) + conjuncts(condition.right)
    return [condition]
