"""GROUP BY and aggregates in the planner: which calls are aggregates, and how each
is kept — by its bookkeeping (argus.aggregates), or by computing its groups again."""

from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..plan import Agg, Aggregate, Col
from ..trees import DIALECT
from .relations import Rel, bind

AGG_ALIAS = "argus_agg"  # the pseudo-relation that names an aggregate's outputs

# aggregate name (as PostgreSQL spells it) -> the canonical one argus maintains
AGGREGATES = {
    "count": "count", "sum": "sum", "avg": "avg", "min": "min", "max": "max",
    "stddev": "stddev_samp", "stddev_samp": "stddev_samp", "stddev_pop": "stddev_pop",
    "variance": "var_samp", "var_samp": "var_samp", "var_pop": "var_pop",
    "bool_and": "bool_and", "every": "bool_and", "bool_or": "bool_or",
    "logical_and": "bool_and", "logical_or": "bool_or",
}


# Aggregates sqlglot reads as plain function calls, and ordered-set ones (WITHIN GROUP).
CALLED_AGGREGATES = {"every", "jsonb_agg", "jsonb_object_agg", "json_agg", "json_object_agg",
                     "xmlagg", "range_agg", "range_intersect_agg"}
# Aggregates whose value depends on the order of the rows: without ORDER BY inside, an
# answer kept by recomputing a group could differ from the query run again.
ORDER_SENSITIVE = {"string_agg", "array_agg", "jsonb_agg", "jsonb_object_agg", "json_agg",
                   "json_object_agg", "xmlagg"}
HOLISTIC = "holistic"  # Agg.func of an aggregate kept by recomputing its groups


def aggregate_calls(exprs: list[exp.Expr]) -> list[exp.AggFunc]:
    calls: dict[str, exp.AggFunc] = {}
    for e in exprs:
        for call in e.find_all(exp.AggFunc, exp.Anonymous, exp.WithinGroup):
            if isinstance(call, exp.Anonymous) and call.name.lower() not in \
                    CALLED_AGGREGATES or isinstance(call.parent, exp.WithinGroup):
                continue
            if isinstance(call.parent, exp.Filter):  # (one the planner will refuse,
                call = call.parent  # or recompute: argus.frontend.filters folds the rest)
            if isinstance(call.parent, exp.Window):  # a window's: not grouped
                continue
            if call.find_ancestor(exp.Select) is not e.find_ancestor(exp.Select) and \
                    call.find_ancestor(exp.Select) is not None and \
                    call.find_ancestor(exp.Select) is not e.parent_select:
                continue
            calls.setdefault(call.sql(DIALECT), call)
    return list(calls.values())

def aggregate(rel: Rel, keys: list[exp.Expr], calls: list[exp.AggFunc]):
    groups = tuple(Col(f"g{j}", bind(k, [rel])) for j, k in enumerate(keys, 1))
    aggs, by_sql = [], {}
    for k, call in enumerate(calls, 1):
        aggs.append(agg(f"a{k}", call, rel))
        by_sql[call.sql(DIALECT)] = f"a{k}"
    key_sql = {k.sql(DIALECT): f"g{j}" for j, k in enumerate(keys, 1)}
    plan = Aggregate(rel.plan, groups, tuple(aggs))
    cols = {(AGG_ALIAS, c): c for c in plan.names}
    new = Rel(plan, cols, frozenset({AGG_ALIAS}))

    def rewrite(expr: exp.Expr) -> exp.Expr:
        def visit(node: exp.Expr) -> exp.Expr:
            text = node.sql(DIALECT)
            if isinstance(node, (exp.AggFunc, exp.Filter, exp.Anonymous,
                                 exp.WithinGroup)) and text in by_sql:
                return exp.column(by_sql[text], table=AGG_ALIAS)
            if text in key_sql and not isinstance(node, (exp.Alias, exp.Literal)):
                return exp.column(key_sql[text], table=AGG_ALIAS)
            return node
        return expr.transform(visit)

    return new, rewrite

def agg(name: str, call: exp.Expr, rel: Rel) -> Agg:
    """An aggregate kept by its bookkeeping (argus.aggregates), or else one kept by
    computing again the groups a cycle touched (HOLISTIC: its whole call as `arg`):
    string_agg, array_agg, jsonb_agg, percentile_cont … WITHIN GROUP, sum(DISTINCT),
    an ORDER BY or a FILTER inside."""
    inner = call.this if isinstance(call, (exp.Filter, exp.WithinGroup)) else call
    func = (inner.name if isinstance(inner, exp.Anonymous)
            else inner.sql(DIALECT).split("(", 1)[0]).strip().lower()
    canonical = AGGREGATES.get(func)
    arg = inner.expressions[0] if isinstance(inner, exp.Anonymous) and \
        len(inner.expressions) == 1 else None if isinstance(inner, exp.Anonymous) \
        else inner.this
    distinct = isinstance(arg, exp.Distinct)
    if distinct and len(arg.expressions) == 1:
        arg = arg.expressions[0]
    kept = (canonical is not None and call is inner and not call.find(exp.Order)
            and (not distinct or canonical == "count" and not isinstance(
                arg, (exp.Distinct, exp.Tuple))))
    if kept and (isinstance(arg, exp.Star) or arg is None):
        return Agg(name, "count", None)
    if kept:
        return Agg(name, canonical, bind(arg, [rel]), distinct)
    if func in ORDER_SENSITIVE and not call.find(exp.Order):
        raise UnsupportedQueryError(
            f"{func}() without ORDER BY inside", "the order of its values is "
            f"unspecified, and a group computed again could list them in another "
            f"order than the query run again: write {func}(… ORDER BY …)")
    if func in ("json_agg", "json_object_agg"):
        raise UnsupportedQueryError(f"{func}()", "json has no equality to find the "
                                    "groups that changed: use jsonb_agg / "
                                    "jsonb_object_agg")
    return Agg(name, HOLISTIC, bind(call, [rel]))
