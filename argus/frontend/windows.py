"""Named windows (`WINDOW w AS (…)`, `OVER w`, `OVER (w ROWS …)`) written out in each
OVER clause, as PostgreSQL reads them: a window that names another takes its
PARTITION BY and, unless it has its own, its ORDER BY; its frame is its own."""

from __future__ import annotations

from sqlglot import exp

from ..errors import QueryError


def inline_windows(tree: exp.Expr) -> exp.Expr:
    for select in list(tree.find_all(exp.Select)):
        named = select.args.get("windows")
        if not named:
            continue
        defined: dict[str, exp.Window] = {}
        for window in named:
            defined[window.name] = _resolved(window, defined)
        for over in list(select.find_all(exp.Window)):
            base = over.args.get("alias")
            if over.parent_select is not select or base is None \
                    or any(over is w for w in named):
                continue
            if base.name not in defined:
                raise QueryError(f"window {base.name!r} does not exist")
            merged = _merged(defined[base.name], over)
            over.set("alias", None)
            for arg in ("partition_by", "order", "spec"):
                over.set(arg, merged.get(arg))
        select.set("windows", None)
    return tree


def _resolved(window: exp.Window, defined: dict[str, exp.Window]) -> exp.Window:
    base = window.args.get("alias")
    if base is None:
        return window
    if base.name not in defined:
        raise QueryError(f"window {base.name!r} does not exist")
    merged = _merged(defined[base.name], window)
    return exp.Window(this=window.this, **{k: v for k, v in merged.items() if v is not None})


def _merged(base: exp.Window, window: exp.Window) -> dict:
    def arg(name: str):
        value = window.args.get(name) or base.args.get(name)
        return value.copy() if isinstance(value, exp.Expr) else (
            [v.copy() for v in value] if value else None)

    return {"partition_by": arg("partition_by"), "order": arg("order"), "spec": arg("spec")}
