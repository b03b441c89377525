"""The functions a query calls: their names as PostgreSQL looks them up, and each call
outside pg_catalog qualified by the schema it resolved to at registration, so that
no later search_path decides what a cycle calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from ..errors import UnsupportedQueryError
from ..names import fold
from ..trees import DIALECT, tree_of


def function_names(tree: exp.Expr) -> frozenset[str]:
    """Names of the functions a query calls, as PostgreSQL will look them up."""
    names = set()
    tree = tree.copy()  # once: generating each function below without copying it
    for func in list(tree.find_all(exp.Func)):
        if isinstance(func, exp.Cast):
            continue
        if isinstance(func, exp.Anonymous):
            names.add(fold(func.name))
            continue
        text = func.sql(DIALECT, copy=False)
        head = text.split("(", 1)[0].strip()
        if "(" in text and head.replace("_", "").isalnum():
            names.add(head.lower())
    return frozenset(names)


def renamed_calls(sql_text: str, tree: exp.Expr, names: frozenset[str]) -> frozenset[str]:
    """Names the text calls that the parsed tree calls by another name (sqlglot reads
    nvl() and ifnull() as COALESCE, ceiling() as CEIL): checked too, so that a function
    of such a name in a schema of the search path is refused (qualify_functions), not
    replaced by what sqlglot made of it. `names`: those the tree calls."""
    tokens = Dialect.get_or_raise(DIALECT).tokenize(sql_text)
    called = {t.text.lower() for before, t, after in zip([None, *tokens], tokens, tokens[1:])
              if t.token_type == TokenType.VAR and after.token_type == TokenType.L_PAREN
              and (before is None or before.token_type != TokenType.DOT)}
    named = {i.name.lower() for i in tree.find_all(exp.Identifier)}
    return frozenset(called - names - named)


def qualify_functions(tree: exp.Expr, schemas: Mapping[str, str]) -> None:
    """Calls of functions outside pg_catalog, schema-qualified in place, so that no
    search_path decides later which function a cycle calls. A function sqlglot knows by
    name (abs, round; nvl, which it reads as COALESCE) is written as PostgreSQL's own:
    one of that name in a schema that resolves it (ahead of pg_catalog, or where
    pg_catalog has none) is refused, not silently replaced."""
    called = {fold(call.name) for call in tree.find_all(exp.Anonymous)}
    replaced = sorted(set(schemas) - called)  # (the tree calls them by a known class)
    if replaced:
        name = replaced[0]
        raise UnsupportedQueryError(
            f"the function {schemas[name]}.{name}()",
            f"argus reads {name}() as a function it knows (PostgreSQL's own, or what "
            f"it stands for), not as this one of the search path: call it by its schema "
            f"({schemas[name]}.{name}(…))")
    for call in list(tree.find_all(exp.Anonymous)):
        schema = schemas.get(fold(call.name))
        if schema is not None and not isinstance(call.parent, exp.Dot):
            call.replace(exp.Dot(this=exp.to_identifier(schema, quoted=True),
                                 expression=call.copy()))


def as_registered(schemas: Mapping[str, str] | None, canonical: str
                  ) -> Callable[[frozenset[str]], dict[str, str]]:
    """For reading a registered query again (a re-plan): its calls resolved as they
    were at registration (`schemas`, kept with it), so that no search_path of whoever
    re-plans it decides them. A query registered before argus kept them: read from its
    canonical text, which has every call outside pg_catalog schema-qualified (a name
    also called bare there resolved to pg_catalog; one called qualified in two schemas
    cannot be told apart there)."""
    if schemas is None:
        tree = tree_of(canonical)
        calls = list(tree.find_all(exp.Anonymous))
        bare = {fold(c.name) for c in calls if not isinstance(c.parent, exp.Dot)}
        schemas = {fold(c.name): c.parent.this.name for c in calls
                   if isinstance(c.parent, exp.Dot) and fold(c.name) not in bare}
    return lambda names: {n: s for n, s in schemas.items() if n in names}
