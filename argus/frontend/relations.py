"""What the planner works with while it translates one query: relations (a plan and
where each SQL column lives in it), results, and SQL bound to a plan's columns."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlglot import exp

from ..errors import QueryError
from ..names import MAX_IDENTIFIER_BYTES
from ..plan import Col, Plan
from ..trees import DIALECT
from .temporal import rewrite_user_calls


def short(name: str) -> str:
    """A column name within PostgreSQL's identifier limit, still unique."""
    if len(name.encode()) <= MAX_IDENTIFIER_BYTES:
        return name
    digest = hashlib.md5(name.encode()).hexdigest()[:8]
    return f"{name.encode()[:50].decode(errors='ignore')}_{digest}"


def conjunction(conditions: list[str]) -> str:
    """SQL conditions joined by AND, each in parentheses (one may hold an OR)."""
    if len(conditions) == 1:
        return conditions[0]
    return " AND ".join(f"({c})" for c in conditions)


def columns_of(expr: exp.Expr) -> list[exp.Column]:
    """Column references of `expr`, including those inside its subqueries."""
    return list(expr.find_all(exp.Column))


def aliases_of(expr: exp.Expr) -> frozenset[str]:
    return frozenset(c.table for c in columns_of(expr))


def figure_name(expr: exp.Expr) -> str:
    """The name PostgreSQL gives an unaliased output column (its FigureColname)."""
    if isinstance(expr, exp.Alias):
        return expr.alias
    if isinstance(expr, exp.Paren):
        return figure_name(expr.this)
    if isinstance(expr, exp.Column):
        return expr.name
    if isinstance(expr, exp.Cast):
        inner = figure_name(expr.this)
        if inner != "?column?":
            return inner
        return _TYPE_NAMES.get(expr.to.this, expr.to.sql(DIALECT).lower())
    if isinstance(expr, exp.Case):
        return "case"
    if isinstance(expr, exp.Subquery) and isinstance(expr.this, exp.Select):
        # a scalar subquery: its one column's name (qualify()'s own aliases are _col_N)
        (inner,) = expr.this.expressions[:1] or [exp.null()]
        if isinstance(inner, exp.Alias) and not inner.alias.startswith("_col_"):
            return inner.alias
        return figure_name(inner.this if isinstance(inner, exp.Alias) else inner)
    if isinstance(expr, exp.Exists):
        return "exists"
    if isinstance(expr, exp.Window):
        return figure_name(expr.this)
    if isinstance(expr, exp.Func):
        if isinstance(expr, exp.Anonymous):
            return expr.name.lower()
        head = expr.sql(DIALECT).split("(", 1)[0].strip()
        if head.replace("_", "").isalnum() and not head[0].isdigit():
            return head.lower()
    return "?column?"


_TYPE_NAMES = {
    exp.DataType.Type.INT: "int4", exp.DataType.Type.BIGINT: "int8",
    exp.DataType.Type.SMALLINT: "int2", exp.DataType.Type.BOOLEAN: "bool",
    exp.DataType.Type.DOUBLE: "float8", exp.DataType.Type.FLOAT: "float4",
    exp.DataType.Type.DECIMAL: "numeric", exp.DataType.Type.TEXT: "text",
    exp.DataType.Type.VARCHAR: "varchar", exp.DataType.Type.DATE: "date",
    exp.DataType.Type.TIMESTAMP: "timestamp", exp.DataType.Type.TIMESTAMPTZ: "timestamptz",
}


@dataclass
class Rel:
    """A relation while planning: its plan and where each SQL column lives in it."""

    plan: Plan
    cols: dict[tuple[str, str], str]  # (table alias, SQL column) -> plan column
    aliases: frozenset[str]
    nullable: frozenset[str] = frozenset()  # aliases on the padded side of a LEFT JOIN


@dataclass
class Result:
    """A translated query expression: its plan and output expressions over it (t1)."""

    plan: Plan
    outputs: list[tuple[str, str]]  # (output name, SQL over the plan's columns as t1)


@dataclass
class Conjunct:
    expr: exp.Expr
    aliases: frozenset[str]
    used: bool = False


def bind(expr: exp.Expr, inputs: list[Rel]) -> str:
    """SQL for `expr` with each column replaced by its plan column in input t1, t2, …"""
    def visit(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Column):
            return node
        key = (node.table, node.name)
        for i, rel in enumerate(inputs, 1):
            if key in rel.cols:
                return exp.column(rel.cols[key], table=f"t{i}", quoted=True)
        raise QueryError(f"column {node.sql(DIALECT)} cannot be used here")

    return rewrite_user_calls(expr.transform(visit)).sql(DIALECT, copy=False)


def passthrough(rel: Rel, referenced: set[tuple[str, str]],
                i: int = 1) -> list[tuple[tuple[str, str], Col]]:
    """Columns of `rel` the query mentions, as columns of a node whose input i is rel."""
    out = []
    for key, plan_col in rel.cols.items():
        if key in referenced:
            out.append((key, Col(plan_col, exp.column(plan_col, table=f"t{i}",
                                                        quoted=True).sql(DIALECT))))
    return out
