"""Commands that run cycles: once, every so often, following the inboxes, from cron or
pg_cron; the worker that carries out registrars' requests; the quarantine."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ..errors import ArgusError, CycleInProgressError
from .base import connect, console, dsn_option, err_console, handle_errors, main


@main.command()
@click.option("--wait/--no-wait", default=False,
              help="Wait for a running cycle instead of skipping (default: skip).")
@click.option("--log", type=click.Path(path_type=Path), default=None,
              help="Also append one timestamped line to this file (rotated at 1 MB).")
@click.option("--every", default=None, metavar="DURATION",
              help="Go on running a cycle every 10s, 5m, ... in this one session, until "
                   "interrupted (a session keeps the compiled network: each cycle after the "
                   "first costs less than a new `argus run`'s).")
@click.option("--cycles", type=click.IntRange(min=1), default=None,
              help="With --every: stop after this many cycles (failed ones count).")
@click.option("--follow", is_flag=True,
              help="Go on running a cycle as soon as rows arrive (woken by each load's "
                   "notification), and carrying out registrars' requests as they come.")
@click.option("--min-interval", type=click.FloatRange(min=0), default=0.0, show_default=True,
              metavar="SECONDS",
              help="With --follow: at most one cycle per this many seconds (loads in "
                   "between wait for the next one).")
@dsn_option
@handle_errors
def run(wait: bool, log: Path | None, every: str | None, cycles: int | None, follow: bool,
        min_interval: float, dsn: str | None) -> None:
    """Run one cycle: claim new rows, update every query, report. Exit status 3 when a
    query failed in it and was isolated (the others went on), 1 when the cycle failed."""
    from ..schedule import interval

    if follow:
        if every is not None:
            raise ArgusError("--follow and --every are two ways to go on: choose one")
        _run_follow(dsn, min_interval, log)
        return
    if every is None:
        if cycles is not None:
            raise ArgusError("--cycles goes with --every")
        with _connected(dsn, log) as db:
            if _run_once(db, wait, log):
                sys.exit(ISOLATED)
        return
    _run_every(dsn, interval(every), cycles, wait, log)


ISOLATED = 3  # argus run's exit status when a query was isolated in the cycle
# argus run carries out registrars' requests first, starting none after this long (a
# flood of them kept it from its cycle); the rest wait for the next run or argus worker
REQUEST_SECONDS = 10.0


def _connected(dsn: str | None, log: Path | None):
    """A session to run cycles in: argus.lean's where nothing needs checking (no planner
    imported), else connect's; a failure (the server down, say) in the cycle log too:
    cron's cycles fail where docs/pipeline.md says they log."""
    from .. import lean
    from ..dsn import resolve_dsn
    from ..schedule import log_cycle, tag

    try:
        return lean.session(resolve_dsn(dsn)) or connect(dsn)
    except ArgusError as exc:
        if log:
            log_cycle(log, tag(dsn) if dsn else "embedded", f"failed: {exc}")
        raise


def _run_follow(dsn: str | None, min_seconds: float, log: Path | None) -> None:
    """A cycle whenever a load commits (LISTEN argus_rows), at most one per
    `min_seconds`; requests as they come (argus_requests). Ctrl-C or SIGTERM stop it."""
    import signal
    import time

    import psycopg

    def stop(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with connect(dsn) as db, psycopg.connect(db.dsn, autocommit=True) as listener:
            listener.execute("LISTEN argus_rows")
            listener.execute("LISTEN argus_requests")
            console.print("following: a cycle whenever rows arrive (Ctrl-C stops)")
            last = float("-inf")
            while True:
                time.sleep(max(0.0, min_seconds - (time.monotonic() - last)))
                last = time.monotonic()
                try:
                    _run_once(db, True, log)
                except ArgusError as exc:  # a failed cycle: its rows wait for the next
                    err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
                for _ in listener.notifies(stop_after=1):
                    pass
    except KeyboardInterrupt:
        err_console.print("stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_every(dsn: str | None, seconds: int, cycles: int | None, wait: bool,
               log: Path | None) -> None:
    """Cycles one `seconds` after the start of the last, in one session (reopened when the
    server goes away). Ctrl-C or SIGTERM stop it between cycles; one cut short rolls back
    like any failed cycle."""
    import signal
    import threading
    import time

    import psycopg

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    done, db = 0, None
    try:
        while not stop.is_set() and (cycles is None or done < cycles):
            started = time.monotonic()
            try:
                db = db or connect(dsn)  # (its later cycles carry out requests too)
                _run_once(db, wait, log)
            except (ArgusError, psycopg.OperationalError) as exc:
                err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
                if db is not None and db.conn.closed:
                    db = None  # reconnect at the next cycle
            done += 1
            if cycles is None or done < cycles:
                stop.wait(max(0.0, seconds - (time.monotonic() - started)))
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if db is not None:
            db.close()


def _run_once(db, wait: bool, log: Path | None) -> bool:
    """One cycle and its report; whether a query was isolated in it."""
    from ..schedule import log_cycle, tag

    if db.owner:  # (for REQUEST_SECONDS at most: the cycle must come)
        _report_requests(db.process_requests(seconds=REQUEST_SECONDS))
    try:
        report = db.run(wait=wait)
    except CycleInProgressError as exc:
        err_console.print(f"skipped: {exc}")
        if log:
            log_cycle(log, tag(db.dsn), "skipped: another cycle was running")
        return False
    except ArgusError as exc:
        if log:
            log_cycle(log, tag(db.dsn), f"failed: {exc}")
        raise
    rows_in = ", ".join(f"{s} {n:,}" for s, n in report.rows_in.items()) or "no streams"
    changed = {q: n for q, n in report.new_rows.items() if n or report.retracted[q]}
    summary = (f"run {report.run_id}: {report.total_in:,} rows in ({rows_in}); "
               f"{report.nodes_run} nodes evaluated; {report.seconds * 1000:.1f} ms")
    if log:
        log_cycle(log, tag(db.dsn), summary + "".join(
            f"; isolated {q}: {e}" for q, e in report.failed.items()))
    console.print(summary)
    for query, n in sorted(changed.items()):
        console.print(f"  {query}: +{n:,} -{report.retracted[query]:,}")
    for query in report.deferred:
        console.print(f"  {query}: changes computed when read (argus_changes.{query})")
    for stream, n in report.quarantined.items():
        err_console.print(f"[yellow]held back:[/] {n:,} rows of {stream} (event time too far "
                          "ahead of the server's clock): see argus quarantine", highlight=False)
    for query, error in report.failed.items():
        err_console.print(f"[red]isolated:[/] query {query} failed: {escape(error)}; the "
                          f"others went on (argus retry {query})", highlight=False)
    for d in report.migrations:  # (the periodic re-plan: settings.reoptimize_every)
        if d.migrated:
            console.print(f"  migrated {d.query}: " + "; ".join(
                f"{a} → {b}" for a, b in d.prediction.trees) + f" ({d.build_ms:,.0f} ms)")
        elif not d.query:  # the re-plan itself failed; the cycle stands
            err_console.print(f"[yellow]re-plan:[/] {escape(d.why)}", highlight=False)
    if log and any(d.migrated for d in report.migrations):
        log_cycle(log, tag(db.dsn), "migrated " + ", ".join(
            d.query for d in report.migrations if d.migrated))
    return bool(report.failed)


def _report_requests(outcomes) -> None:
    for o in outcomes:
        if o.status == "done":
            console.print(f"request {o.request_id} of {o.requested_by}: {o.kind} {o.name} done")
        else:
            err_console.print(f"[red]request {o.request_id} of {o.requested_by} refused:[/] "
                              f"{escape(str(o.error))}", highlight=False)


@main.command()
@click.option("--once", is_flag=True, help="Carry out the pending requests, then stop.")
@dsn_option
@handle_errors
def worker(once: bool, dsn: str | None) -> None:
    """Carry out registrars' requests (create streams, register and drop queries) as
    the owner, as they come; run it as a member of the database's owner role."""
    with connect(dsn) as db:
        if not db.owner:
            raise click.UsageError("argus worker runs as a member of the owner role")
        _report_requests(db.process_requests(pause=not once))
        if once:
            return
        db.conn.execute("LISTEN argus_requests")
        console.print("waiting for requests (Ctrl-C stops)")
        while True:
            for _ in db.conn.notifies(timeout=5.0, stop_after=1):
                pass
            _report_requests(db.process_requests(pause=True))


@main.group(invoke_without_command=True)
@click.option("--stream", default=None, help="Only this stream's rows.")
@click.option("--limit", default=0, show_default=True, help="Also list the first N rows held.")
@dsn_option
@click.pass_context
@handle_errors
def quarantine(ctx: click.Context, stream: str | None, limit: int, dsn: str | None) -> None:
    """Rows held back because their event time was too far ahead of the server's clock:
    a summary per stream, and with --limit N the first N rows."""
    if ctx.invoked_subcommand is not None:  # `release` reads the group's options too
        ctx.obj = {"stream": stream, "dsn": dsn}
        return
    with connect(dsn) as db:
        held = db.quarantine_summary(stream)
        rows = db.quarantined(stream, limit) if limit else []
    table = Table("stream", "rows held", "event times", "held", "reasons",
                  title=f"quarantine: {sum(h[1] for h in held):,} rows", title_justify="left")
    for name, count, first, last, since, until, reasons in held:
        table.add_row(name, f"{count:,}", f"{first} … {last}", f"{since:%Y-%m-%d %H:%M} … "
                      f"{until:%Y-%m-%d %H:%M}", reasons)
    console.print(table)
    if rows:
        table = Table("id", "stream", "row", "reason", "held at",
                      title=f"the first {len(rows):,}", title_justify="left")
        for quarantine_id, name, row, reason, held_at in rows:
            table.add_row(str(quarantine_id), name, str(row), reason, str(held_at))
        console.print(table)


@quarantine.command("release")
@click.option("--stream", default=None, help="Only this stream's rows.")
@click.option("--id", "ids", type=int, multiple=True, help="Only these rows (repeatable).")
@dsn_option
@click.pass_context
@handle_errors
def quarantine_release(ctx: click.Context, stream: str | None, ids: tuple[int, ...],
                       dsn: str | None) -> None:
    """Return held rows to their inboxes; the next cycle claims them (raise
    max_clock_lead first if their event times are right)."""
    group = ctx.obj or {}
    stream, dsn = stream or group.get("stream"), dsn or group.get("dsn")
    with connect(dsn) as db:
        moved = db.release_quarantine(stream, ids or None)
    console.print(f"{moved} rows returned to their inboxes")


@main.command()
@click.option("--every", default=None, help="Run a cycle every 5m, 1h, 1d (pg_cron: also 30s).")
@click.option("--cron", "cron_expr", default=None, help="A cron expression instead of --every.")
@click.option("--pg-cron", is_flag=True, help="Schedule inside PostgreSQL with pg_cron.")
@click.option("--log", type=click.Path(path_type=Path), default=None,
              help="Where cron appends each cycle's output (default: in the argus data dir).")
@click.option("--list", "listing", is_flag=True, help="List the scheduled cycles.")
@dsn_option
@handle_errors
def schedule(every: str | None, cron_expr: str | None, pg_cron: bool, log: Path | None,
             listing: bool, dsn: str | None) -> None:
    """Run cycles on a schedule: a crontab entry (or a pg_cron job) per database."""
    from .. import schedule as sched
    from ..dsn import resolve_dsn

    if listing:
        table = Table("schedule", "database", "runs", title="scheduled cycles",
                      title_justify="left")
        for entry in sched.entries():
            table.add_row(entry.schedule, entry.target, "cron: argus run")
        if pg_cron:
            for name, expression, database in sched.pg_cron_jobs(resolve_dsn(dsn)):
                table.add_row(expression, database, f"pg_cron job {name}")
        console.print(table)
        return
    target = resolve_dsn(dsn)
    with connect(target):
        pass  # the catalog exists before anything runs a cycle
    expression = sched.cron_expression(every, cron_expr, seconds_ok=pg_cron)
    if pg_cron:
        job = sched.schedule_pg_cron(target, expression)
        console.print(f"pg_cron job {job} runs SELECT argus.run_cycle() on {expression!r}")
    else:
        entry = sched.schedule_cron(target, expression, log)
        if not sched.cron_running():
            err_console.print("[yellow]warning:[/] no cron daemon runs on this machine: the "
                              "entry does nothing until one does (Debian: apt-get install "
                              "cron, then service cron start)", highlight=False)
        console.print(f"crontab: {entry.schedule} argus run (database {entry.target}); "
                      f"one line per cycle in {log or sched.default_log(entry.target)}")


@main.command()
@click.option("--pg-cron", is_flag=True, help="Remove the pg_cron job instead.")
@dsn_option
@handle_errors
def unschedule(pg_cron: bool, dsn: str | None) -> None:
    """Stop running this database's cycles on a schedule."""
    from .. import schedule as sched
    from ..dsn import resolve_dsn

    target = resolve_dsn(dsn)
    removed = sched.unschedule_pg_cron(target) if pg_cron else sched.unschedule_cron(target)
    console.print("unscheduled" if removed else "nothing was scheduled for this database")
