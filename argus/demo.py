"""`argus demo`: a transfer stream, a few queries, several cycles of generated data."""

from __future__ import annotations

import statistics
import time

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from rich.console import Console
from rich.table import Table

from .api import Argus
from .bench.datagen import TRANSFER_COLUMNS, TransferGenerator
from . import roles
from .names import STREAMS_SCHEMA
from .nodes import KINDS

DEMO_DATABASE = "argus_demo"

QUERIES = {
    "big_transfers": """
        SELECT tran_id, tran_date, sender, receiver, amount
          FROM transfers WHERE amount > 1000000""",
    "big_then_half": """
        SELECT r1.tran_id AS first_id, r2.tran_id AS second_id, r2.amount
          FROM transfers r1 JOIN transfers r2 ON r2.sender = r1.receiver
         WHERE r1.amount > 1000000 AND r2.amount >= r1.amount * 0.5
           AND r2.tran_date BETWEEN r1.tran_date AND r1.tran_date + 20""",
    "heavy_senders": """
        SELECT sender, count(*) AS transfers, sum(amount) AS total
          FROM transfers GROUP BY sender HAVING sum(amount) > 20000000""",
    "watchlist": """
        SELECT tran_id, sender, receiver, amount * 0.92 AS amount_eur
          FROM transfers
         WHERE sender IN ('acct00007', 'acct00042', 'acct01234', 'acct12345') AND amount > 5000""",
}


def demo_dsn(admin_dsn: str, database: str = DEMO_DATABASE) -> str:
    """Recreate the demo database on the server `admin_dsn` points at; return its DSN."""
    roles.drop_database(admin_dsn, database)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    return make_conninfo(admin_dsn, dbname=database)


def _loader(dsn: str, use_spark: bool, console: Console):
    """load(db, n): the next n generated transfers into the stream, by Python or Spark."""
    if not use_spark:
        gen = TransferGenerator(seed=7, accounts=20_000)
        return lambda db, n: db.insert("transfers", gen.batch(n))
    from . import spark as argus_spark
    from .bench.sparkgen import transfers

    console.print("[dim]starting Spark (local mode) to generate and load the data[/]")
    session = argus_spark.session(app="argus-demo")
    state = {"next": 1}

    def load(db: Argus, n: int) -> int:
        df = transfers(session, n, first_id=state["next"], accounts=20_000, seed=state["next"])
        state["next"] += n
        return argus_spark.load(df, "transfers", dsn, load_id=f"demo-{state['next']}").rows
    return load


def run_demo(admin_dsn: str, *, cycles: int = 5, history: int = 100_000, batch: int = 2_000,
             console: Console | None = None, explicit_dsn: bool = False,
             use_spark: bool = False, database: str = DEMO_DATABASE) -> dict[str, int]:
    console = console or Console()
    parts = conninfo_to_dict(admin_dsn)
    console.print(f"[dim]database {database} on {parts.get('host')}:{parts.get('port')}: "
                  "dropped if it exists, created anew[/]", highlight=False)
    dsn = demo_dsn(admin_dsn, database)
    load = _loader(dsn, use_spark, console)
    totals: dict[str, int] = {}
    with Argus(dsn) as db:
        db.create_stream("transfers", TRANSFER_COLUMNS, time_column="tran_date")
        # (no query reads the stream yet: the first registration claims these rows)
        loaded = load(db, history)
        console.print(f"[bold]stream[/] transfers: {loaded:,} rows of history loaded"
                      + (" by Spark" if use_spark else ""))
        for name, text in QUERIES.items():
            info = db.register_query(name, text)
            shared = [n.id for n in info.nodes if not n.created and not KINDS[n.kind].loaded]
            console.print(f"[bold]registered[/] {name}: {len(db.results(name)):,} rows from "
                          f"history" + (f", sharing node {shared}" if shared else ""))
        seconds = []
        for i in range(1, cycles + 1):
            load(db, batch)
            report = db.run()
            seconds.append(report.seconds)
            title = f"cycle {i}: {report.total_in:,} new transfers, {report.seconds * 1000:.1f} ms"
            if console.is_terminal:
                console.rule(title)
            else:  # (off a terminal the console is as wide as a line may be: no rule)
                console.print(f"── {title} ──")
            for name in QUERIES:
                rows = db.new_results(name)
                totals[name] = totals.get(name, 0) + len(rows)
                if rows:
                    console.print(_table(db, name, rows))
                else:
                    console.print(f"{name}: no new results")
        # the first cycle also compiles the network's program, once per session
        _compare(db, console, statistics.median(seconds[1:] or seconds))
    console.print(
        f"\nThe demo database stays on the server. Look at it with psql:\n"
        f"  argus psql -d {database}" + (" --dsn '…'" if explicit_dsn else "") + "\n"
        f"  => SELECT * FROM argus_results.big_transfers;   -- the current answer\n"
        f"  => SELECT * FROM argus_changes.big_transfers;   -- the last cycle's changes\n"
        f"  => SELECT * FROM argus.runs;  SELECT * FROM argus.nodes;\n"
        f"(server {parts.get('host')}:{parts.get('port')}; `argus server stop` stops "
        f"the embedded one)")
    return totals


def _table(db: Argus, name: str, rows: list[tuple], limit: int = 5) -> Table:
    columns = [c for c, _ in db.query(name).columns]
    table = Table(title=f"{name}: {len(rows)} new", title_justify="left")
    for c in columns + ["±"]:
        table.add_column(c)
    for row in rows[:limit]:
        table.add_row(*(str(v) for v in row[:-1]), "+" if row[-1] > 0 else "-")
    if len(rows) > limit:
        table.add_row(*(["…"] * (len(columns) + 1)))
    return table


def _compare(db: Argus, console: Console, cycle_seconds: float) -> None:
    """The point of argus: a cycle against re-running every query from scratch (median
    of three)."""
    reruns = []
    for _ in range(3):
        with db.conn.transaction():
            db.conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(
                sql.Identifier(STREAMS_SCHEMA)))
            started = time.perf_counter()
            for info in db.queries():
                db.conn.execute(info.sql).fetchall()  # the demo's own query texts
            reruns.append(time.perf_counter() - started)
    rerun = statistics.median(reruns)
    console.print(f"\na cycle (median): {cycle_seconds * 1000:.1f} ms; re-running the "
                  f"{len(QUERIES)} queries from scratch: {rerun * 1000:.1f} ms "
                  f"({rerun / cycle_seconds:.1f}x)")
