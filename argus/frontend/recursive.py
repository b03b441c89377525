"""WITH RECURSIVE as one node (argus.nodes.recursive): the union of its non-recursive
branches, planned as any query, and its one recursive branch kept as SQL to run again
over the new rows (semi-naive evaluation). Over insert-only streams, with UNION, without
negation, aggregation or the clock, the relation only grows, and a cycle adds exactly
what the rows it claims derive. Anything else is refused here, naming why.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..trees import DIALECT
from .temporal import calls_user_clock

RECURSIVE = "argus_rec"
OCCURRENCE = "argus_occ_{}"
PRUNE = "argus_prune"


def reads(query: exp.Expr, name: str) -> bool:
    return any(t.name == name for t in query.find_all(exp.Table))


def branches(cte: exp.CTE) -> tuple[list[exp.Expr], exp.Select]:
    """The non-recursive branches and the recursive one of a recursive CTE's body."""
    name = cte.alias
    parts, todo = [], [cte.this]
    while todo:
        part = todo.pop(0)
        if isinstance(part, exp.Union):
            if not part.args.get("distinct"):
                raise UnsupportedQueryError(
                    f"WITH RECURSIVE {name} over UNION ALL",
                    "write UNION: argus keeps the relation as a set (UNION ALL counts each "
                    "derivation, and may never end)")
            todo[:0] = [part.this, part.expression]
        elif isinstance(part, exp.SetOperation):
            raise UnsupportedQueryError(f"WITH RECURSIVE {name} over {part.key.upper()}",
                                        "its branches are joined by UNION")
        else:
            parts.append(part.this if isinstance(part, exp.Subquery) else part)
    base = [p for p in parts if not reads(p, name)]
    steps = [p for p in parts if reads(p, name)]
    if not base or len(steps) != 1:
        raise UnsupportedQueryError(
            f"WITH RECURSIVE {name} with {len(base)} non-recursive and {len(steps)} "
            "recursive branches", "write base UNION step, the step reading it once")
    return base, steps[0]


def step_text(name: str, step: exp.Expr, streams: set[str]
              ) -> tuple[str, list[str], list[str], list[tuple[str | None, str]]]:
    """The recursive branch as SQL with placeholders (plan.Recursive), the SQL of the
    values it returns, the stream each `{o<i>}` reads, and the columns its rounds
    probe: (a stream, or None for the relation itself; a column)."""
    _check_step(name, step)
    step = step.copy()
    items, occurrences = _placeholders(name, step, streams)
    keys = _keys(step, items)
    values = _copied_values(name, step)
    step.where(exp.column(PRUNE, quoted=True), copy=False)
    text = step.sql(DIALECT).replace("{", "{{").replace("}", "}}")
    text = re.sub(r'"argus_occ_(\d+)"', r"{o\1}", text)
    text = text.replace(f'"{RECURSIVE}"', "{r}").replace(f'"{PRUNE}"', "{prune}")
    return (text, [v.sql(DIALECT) for v in values], [o for o in occurrences if o is not None],
            sorted({(occurrences[position], column) for position, column in keys},
                   key=lambda k: (k[0] or "", k[1])))


def _check_step(name: str, step: exp.Expr) -> None:
    """A recursive branch is a join of the relation and streams, by inner joins: the
    relation then only grows."""
    if not isinstance(step, exp.Select):
        raise UnsupportedQueryError(f"the recursive branch of {name}: not a SELECT")
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in step.expressions):
        raise UnsupportedQueryError(f"SELECT * in the recursive branch of {name}",
                                    "name the columns it returns")
    for arg, construct in (("group", "GROUP BY"), ("having", "HAVING"),
                           ("distinct", "DISTINCT"), ("limit", "LIMIT"), ("offset", "OFFSET"),
                           ("order", "ORDER BY")):
        if step.args.get(arg):
            raise UnsupportedQueryError(f"{construct} in the recursive branch of {name}",
                                        "it must be a join of the relation and streams")
    if step.find(exp.AggFunc, exp.Window, exp.Subquery, exp.Exists) or any(
            isinstance(i, exp.In) and i.args.get("query") for i in step.find_all(exp.In)):
        raise UnsupportedQueryError(
            f"an aggregate, a window or a subquery in the recursive branch of {name}",
            "it must be a join of the relation and streams (then the relation only grows)")
    if calls_user_clock(step):
        raise UnsupportedQueryError(f"argus_now() in the recursive branch of {name}")
    if any(j.side for j in step.args.get("joins") or []):
        raise UnsupportedQueryError(f"an outer join in the recursive branch of {name}",
                                    "join the relation and streams by inner joins")


def _placeholders(name: str, step: exp.Select, streams: set[str]
                  ) -> tuple[list[exp.Expr], list[str | None]]:
    """The branch's FROM items, aliased as the node names them (so that equal recursions
    share it), the relation and each stream occurrence a placeholder: the items, and
    the stream each is (None: the relation)."""
    items = [step.args["from_"].this] + [j.this for j in step.args.get("joins") or []]
    occurrences: list[str | None] = []
    renamed = {}
    for position, item in enumerate(items):
        if not isinstance(item, exp.Table):
            raise UnsupportedQueryError(f"{item.sql(DIALECT)} in the recursive branch of "
                                        f"{name}", "read the relation and streams only")
        renamed[item.alias_or_name] = f"argus_t{position}"
        item.set("alias", exp.TableAlias(this=exp.to_identifier(f"argus_t{position}")))
        if item.name == name:
            item.set("this", exp.to_identifier(RECURSIVE, quoted=True))
            occurrences.append(None)
        elif item.name in streams:
            occurrences.append(item.name)
            item.set("this", exp.to_identifier(
                OCCURRENCE.format(sum(o is not None for o in occurrences) - 1), quoted=True))
        else:
            raise UnsupportedQueryError(f"{item.name} in the recursive branch of {name}",
                                        "read the relation and streams only")
    for column in step.find_all(exp.Column):
        if column.table in renamed:
            column.set("table", exp.to_identifier(renamed[column.table]))
    return items, occurrences


def _copied_values(name: str, step: exp.Select) -> list[exp.Expr]:
    """The values the branch returns, each copied from its inputs: finitely many rows,
    so the rounds end."""
    values = [e.this if isinstance(e, exp.Alias) else e for e in step.expressions]
    for value in values:
        if not all(isinstance(n, (exp.Column, exp.Identifier, exp.Literal, exp.Null,
                                  exp.Boolean, exp.Cast, exp.DataType, exp.Paren))
                   for n in value.walk()):
            raise UnsupportedQueryError(
                f"{value.sql(DIALECT)} computed in the recursive branch of {name}",
                "its columns are maintained when copied from the relation and streams "
                "(a computed value, a counter, can grow without end; filter on it in "
                "WHERE instead)")
    return values


def _keys(step: exp.Select, items: list[exp.Expr]) -> list[tuple[int, str]]:
    """(FROM item position, column) of the columns the step's equalities compare
    between two FROM items: what each round probes, to be indexed."""
    conditions = [j.args.get("on") for j in step.args.get("joins") or []]
    if step.args.get("where"):
        conditions.append(step.args["where"].this)
    position = {f"argus_t{i}": i for i in range(len(items))}
    keys = []
    for condition in filter(None, conditions):
        for eq in condition.find_all(exp.EQ):
            sides = [eq.this, eq.expression]
            if all(isinstance(c, exp.Column) and c.table in position for c in sides) \
                    and sides[0].table != sides[1].table:
                keys += [(position[c.table], c.name) for c in sides]
    return keys
