"""WITH items scoped as PostgreSQL scopes them, named apart, then all at the top.

A WITH item is visible in the query it is attached to (its body, the items after it,
itself if RECURSIVE) and in everything nested there, and it hides a stream or an outer
item of the same name. The rest of argus resolves a FROM name against the query's CTEs
as one set, so before anything else each item that a name alone would confuse — one
named like another item or like a stream — is renamed apart (`c` -> `c_2`), and every
reference in its scope follows it (`FROM c` -> `FROM c_2 AS c`, so that columns
qualified `c.k` still read it). Named apart, the items of nested WITH clauses mean the
same at the top (a subquery `IN (WITH c AS … SELECT … FROM c)` is then a plain
subquery): they are moved into the outermost WITH, each after the items it reads.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable

from sqlglot import exp

from ..names import fold


def _name(identifier: exp.Identifier) -> str:
    return identifier.this if identifier.quoted else fold(identifier.this)


def scope_ctes(tree: exp.Expr, streams: Iterable[str]) -> exp.Expr:
    """The tree with every WITH item named apart where a name could mean two things,
    and nested WITH items moved to the top."""
    ctes = list(tree.find_all(exp.CTE))
    counts = Counter(_name(c.args["alias"].this) for c in ctes)
    taken = set(counts) | set(streams)
    clashing = {n for n, k in counts.items() if k > 1} | (set(counts) & set(streams))
    if not clashing:
        return _hoisted(tree)
    fresh: dict[int, str] = {}
    for cte in ctes:
        name = _name(cte.args["alias"].this)
        if name in clashing:
            new = next(f"{name}_{k}" for k in itertools.count(2) if f"{name}_{k}" not in taken)
            taken.add(new)
            fresh[id(cte)] = new
    _visit(tree, {}, fresh)
    for cte in ctes:
        if id(cte) in fresh:
            cte.args["alias"].set("this", exp.to_identifier(fresh[id(cte)], quoted=True))
    return _hoisted(tree)


def _hoisted(tree: exp.Expr) -> exp.Expr:
    """Every WITH item in the outermost WITH, each after the items it reads (by
    position otherwise). Left as it is where a nested WITH is RECURSIVE."""
    withs = list(tree.find_all(exp.With))
    top = tree.args.get("with_") if isinstance(tree, exp.Query) else None
    nested = [w for w in withs if w is not top]
    if not nested or any(w.args.get("recursive") for w in nested):
        return tree
    order = {id(node): i for i, node in enumerate(tree.walk())}
    items = sorted(tree.find_all(exp.CTE), key=lambda c: order[id(c)])
    for w in nested:
        w.pop()
    names = {_name(c.args["alias"].this): c for c in items}
    placed: list[exp.CTE] = []
    done: set[int] = set()

    def place(cte: exp.CTE, reading: tuple[int, ...] = ()) -> None:
        if id(cte) in done or id(cte) in reading:
            return
        for table in cte.this.find_all(exp.Table):
            other = names.get(_name(table.this)) if isinstance(table.this, exp.Identifier) \
                else None
            if other is not None and other is not cte:
                place(other, (*reading, id(cte)))
        done.add(id(cte))
        placed.append(cte)

    for cte in items:
        place(cte)
    recursive = bool(top and top.args.get("recursive"))
    tree.set("with_", exp.With(expressions=[c.pop() for c in placed], recursive=recursive))
    return tree


def _visit(node: exp.Expr, env: dict[str, str], fresh: dict[int, str]) -> None:
    """Rename the FROM references under `node`: `env` maps each visible WITH name to
    the name its item gets (or keeps)."""
    with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
    if with_ is not None:
        recursive = bool(with_.args.get("recursive"))
        inner = dict(env)
        for cte in with_.expressions:
            name = _name(cte.args["alias"].this)
            own = fresh.get(id(cte), name)
            if recursive:
                inner[name] = own
            _visit(cte.this, inner, fresh)
            inner[name] = own
        env = inner
    if isinstance(node, exp.Table) and not node.args.get("db") \
            and isinstance(node.this, exp.Identifier):
        name = _name(node.this)
        if name in env and env[name] != name:
            if not node.alias:
                node.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
            node.set("this", exp.to_identifier(env[name], quoted=True))
        return
    for child in node.iter_expressions():
        if isinstance(child, exp.With):
            continue  # visited above, each item in its own scope
        _visit(child, env, fresh)


def unique_aliases(tree: exp.Expr) -> exp.Expr:
    """After sqlglot's qualify, which names streams and derived tables apart (_0, _1, …)
    but leaves each reference of a WITH item its alias: the same alias in two scopes
    (`FROM c AS x WHERE k IN (SELECT k FROM d AS x)`) renamed apart, with the columns
    each binds, so that nothing downstream takes one for the other."""
    taken = {a.name for a in tree.find_all(exp.TableAlias) if a.name}
    used: set[str] = set()

    def fresh(name: str) -> str:
        if name not in used:
            used.add(name)
            return name
        new = next(f"{name}_{k}" for k in itertools.count(2)
                   if f"{name}_{k}" not in taken and f"{name}_{k}" not in used)
        used.add(new)
        return new

    def visit(node: exp.Expr, env: dict[str, str]) -> None:
        if isinstance(node, exp.Column):
            if node.table in env and env[node.table] != node.table:
                node.set("table", exp.to_identifier(env[node.table], quoted=True))
            return
        if isinstance(node, exp.Select):
            local = dict(env)
            for item in [node.args.get("from_"), *(node.args.get("joins") or [])]:
                source = item.this if item is not None else None
                alias = source.args.get("alias") if source is not None else None
                if alias is not None and alias.name:
                    old, new = alias.name, fresh(alias.name)
                    if new != old:
                        alias.set("this", exp.to_identifier(new, quoted=True))
                    local[old] = new
            env = local
        for child in node.iter_expressions():
            visit(child, {} if isinstance(child, exp.With) else env)

    visit(tree, {})
    return tree
