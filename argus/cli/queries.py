"""Commands for the queries: register, drop, retry, read, subscribe, explain, optimize."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from .base import connect, console, dsn_option, handle_errors, main

# mqo.sharing.STRATEGIES, not imported: a command starts without the planner
# (tests/test_layers checks they are equal)
STRATEGIES = ("selection", "match-plan", "none")


@main.command()
@click.argument("name")
@click.option("--sql", "sql_text", default=None, help="The query's SQL.")
@click.option("-f", "--file", "path", type=click.Path(exists=True, dir_okay=False,
                                                       path_type=Path),
              help="A file holding the query's SQL ('-' for stdin).")
@click.option("--sharing", type=click.Choice(STRATEGIES), default=None,
              help="How to share the network's nodes (default $ARGUS_SHARING, else "
                   "selection).")
@click.option("--force", is_flag=True,
              help="Register even if its estimated state exceeds max_query_state.")
@click.option("--rerun", is_flag=True,
              help="Evaluate it by re-running it in each cycle that brings its streams rows, "
                   "not incrementally (cheap queries over small streams).")
@click.option("--dry-run", is_flag=True,
              help="Show the nodes it would make and share, and what each would keep and "
                   "cost, and keep nothing (registered, explained, rolled back).")
@dsn_option
@handle_errors
def register(name: str, sql_text: str | None, path: Path | None, sharing: str | None,
             force: bool, rerun: bool, dry_run: bool, dsn: str | None) -> None:
    """Register continuous query NAME."""
    if (sql_text is None) == (path is None):
        raise click.UsageError("give the query with exactly one of --sql or -f FILE")
    text = sql_text if sql_text is not None else path.read_text()
    evaluate = "rerun" if rerun else "incremental"
    with connect(dsn, sharing) as db:
        if dry_run:
            info, explained = db.preview_query(name, text, force=force, evaluate=evaluate)
            console.print(explained, markup=False, highlight=False)
            console.print(f"dry run: query {info.name} would create nodes "
                          f"{_created(info) or 'none'} and share {_shared(info) or 'none'}; "
                          "nothing was registered")
            return
        info = db.register_query(name, text, force=force, evaluate=evaluate)
        console.print(f"query {info.name} registered: {len(db.results(info.name))} rows now; "
                      f"nodes created {_created(info) or 'none'}, shared "
                      f"{_shared(info) or 'none'}; answer in argus_results.{info.name}")


def _created(info) -> list[int]:
    return [n.id for n in info.nodes if n.created]


def _shared(info) -> list[int]:
    from ..nodes import KINDS

    return [n.id for n in info.nodes if not n.created and not KINDS[n.kind].loaded]


@main.command()
@click.argument("name")
@dsn_option
@handle_errors
def drop(name: str, dsn: str | None) -> None:
    """Drop query NAME and the nodes no other query needs."""
    with connect(dsn) as db:
        db.unregister_query(name)
        console.print(f"query {name} dropped")


@main.command()
@click.argument("name")
@dsn_option
@handle_errors
def retry(name: str, dsn: str | None) -> None:
    """Put query NAME, isolated after a failure, back into the cycles (rebuilt)."""
    with connect(dsn) as db:
        info = db.retry(name)
        console.print(f"query {info.name} is back: {db.count_results(info.name):,} rows now")


@main.command()
@click.argument("name")
@click.option("--changes", is_flag=True, help="Show the last cycle's changes instead.")
@click.option("--limit", default=50, show_default=True)
@dsn_option
@handle_errors
def results(name: str, changes: bool, limit: int, dsn: str | None) -> None:
    """Print query NAME's current answer (or last changes)."""
    with connect(dsn) as db:
        columns = [c for c, _ in db.query(name).columns] + (["argus_sign"] if changes else [])
        rows = db.new_results(name, limit) if changes else db.results(name, limit)
        total = db.count_results(name, changes)
    table = Table(*columns, title=f"{name}: {total:,} rows" + (
        f", the first {len(rows):,}" if total > len(rows) else ""), title_justify="left")
    for row in rows:
        table.add_row(*map(str, row))
    console.print(table)


@main.command()
@click.argument("name")
@click.option("--since", type=int, default=None,
              help="Follow from this position (a cycle's run id) instead of printing the "
                   "answer first.")
@click.option("--consumer", default=None,
              help="A name under which argus keeps the position reached, to resume there.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl",
              show_default=True)
@click.option("--timeout", type=float, default=None,
              help="Stop after so many seconds without a change (default: run until Ctrl-C).")
@dsn_option
@handle_errors
def subscribe(name: str, since: int | None, consumer: str | None, fmt: str,
              timeout: float | None, dsn: str | None) -> None:
    """Print query NAME's answer, then each committed cycle's changes to it, as they
    happen, one line per row with its position and sign (+1 in, -1 out)."""
    import csv
    import json

    with connect(dsn) as db:
        writer, header = csv.writer(sys.stdout), False
        try:
            for changes in db.subscribe(name, consumer, since, timeout):
                names = changes.columns[:-1]
                for *values, sign in changes.rows:
                    if fmt == "jsonl":
                        print(json.dumps({"position": changes.position, "sign": sign,
                                          "row": dict(zip(names, values))}, default=str))
                    else:
                        if not header:
                            writer.writerow(["position", "sign", *names])
                            header = True
                        writer.writerow([changes.position, sign, *values])
                sys.stdout.flush()
        except KeyboardInterrupt:
            pass


@main.command()
@click.argument("name", required=False)
@click.option("--svg", "svg_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the query's nodes as a picture (SVG) to this file.")
@click.option("--audit", is_flag=True,
              help="Run a cycle over a sample of new rows (rolled back) with every statement "
                   "EXPLAIN ANALYZEd, and flag those that read far more than their delta "
                   "(of query NAME's nodes, or all). Needs a superuser's session.")
@click.option("--rows", default="10,1000", show_default=True,
              help="With --audit: the sample's rows per stream, e.g. 10,1000.")
@click.option("--code", is_flag=True, help="Also the SQL each node runs, and the views.")
@dsn_option
@handle_errors
def explain(name: str | None, svg_path: Path | None, audit: bool, rows: str, code: bool,
            dsn: str | None) -> None:
    """Show query NAME's nodes: what each computes, keeps and costs (with --code, the SQL
    each runs; with --svg, draw them; with --audit, what each statement did for its
    delta)."""
    with connect(dsn) as db:
        if audit:
            from .. import audit as node_audit

            flagged = 0
            for size in (int(r) for r in rows.split(",")):
                statements = node_audit.audit(db.conn, size, name)
                flagged += sum(bool(s.flags) for s in statements)
                click.echo(f"── a sample of {size:,} rows per stream ──")
                click.echo(node_audit.report([s for s in statements if s.node_id is not None]))
            if flagged:
                raise click.ClickException(f"{flagged} statements flagged")
            return
        if name is None:
            raise click.UsageError("name a query (or --audit)")
        if svg_path is None:
            click.echo(db.explain(name, code))
            return
        from ..picture import of_query

        svg_path.write_text(of_query(db.conn, name))
        console.print(f"query {name}'s nodes drawn in {svg_path}")


@main.command()
@click.option("--dry-run", is_flag=True,
              help="Decide and show, change nothing.")
@click.option("--query", "queries", multiple=True, metavar="NAME",
              help="Only this query (repeatable); default: every query with joins.")
@click.option("--force", is_flag=True,
              help="Migrate to the cheapest other layout whatever it saves (to try "
                   "migrations).")
@click.option("--evaluate", type=click.Choice(["incremental", "rerun"]), default=None,
              help="Migrate the queries to this evaluation; it sticks (the re-run fallback "
                   "leaves them alone after).")
@dsn_option
@handle_errors
def optimize(dry_run: bool, queries: tuple[str, ...], force: bool, evaluate: str | None,
             dsn: str | None) -> None:
    """Plan each query again on what the cycles observed — incremental or re-run, and
    its joins — and migrate those that gain to their new layout, between two cycles
    (Moving State); show which nodes would be views instead of tables, and how far the
    estimates were off."""
    with connect(dsn) as db:
        decisions = db.migrate(queries or None, force=force, dry_run=dry_run,
                               evaluate=evaluate)
        found = db.optimize()
        accuracy = db.estimate_accuracy()
    if decisions:
        table = Table("query", "migrated" if not dry_run else "would migrate",
                      "join trees: now → new", "row ops/cycle: now → new", "build ms", "why",
                      title="the queries planned again")
        for d in decisions:
            p = d.prediction
            table.add_row(d.query, "yes" if d.migrated else "no",
                          "\n".join(f"{a} → {b}" for a, b in p.trees),
                          "" if p.current is None else f"{p.current:,.0f} → {p.best:,.0f}",
                          "" if d.build_ms is None else f"{d.build_ms:,.0f}", d.why)
        console.print(table)
    if not found:
        console.print("nothing to change: every node is laid out as the settings decide today")
    else:
        table = Table("node", "kind", "change", "why", "frees MiB", "saves ms/cycle",
                      title="tables and views (not migrated yet: register the query again)")
        for p in found:
            table.add_row("" if p.node is None else str(p.node), p.kind, p.change, p.why,
                          "" if p.mib is None else f"{p.mib:,.1f}",
                          "" if p.ms is None else f"{p.ms:,.1f}")
        console.print(table)
    if accuracy:
        table = Table("kind", "nodes", "rows: measured / estimated", "within 2×",
                      "new rows per cycle: measured / estimated", "within 2×",
                      title="the join order's estimates against the cycles (medians)")
        for a in accuracy:
            table.add_row(a.kind, str(a.nodes), f"{a.rows:,.2f}", f"{a.rows_within_2x:.0%}",
                          "" if a.rate is None else f"{a.rate:,.2f}",
                          "" if a.rate_within_2x is None else f"{a.rate_within_2x:.0%}")
        console.print(table)
