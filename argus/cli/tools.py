"""The demo, the benchmarks and the data generators."""

from __future__ import annotations

from pathlib import Path

import click

from .base import console, dsn_option, handle_errors, main


@main.command()
@click.option("--cycles", default=5, show_default=True)
@click.option("--history", default=100_000, show_default=True, help="Rows loaded first.")
@click.option("--batch", default=2_000, show_default=True, help="Rows per cycle.")
@click.option("--spark", "use_spark", is_flag=True,
              help="Generate and load the data with Spark (needs the spark extra and Java).")
@click.option("--into", default="argus_demo", show_default=True, metavar="NAME",
              help="The database the demo makes on the server: dropped first if it exists.")
@dsn_option
@handle_errors
def demo(cycles: int, history: int, batch: int, use_spark: bool, into: str,
         dsn: str | None) -> None:
    """Run a demo: transfers, a few queries, several cycles, in a database of its own
    (argus_demo, dropped and made anew, on the server of --dsn or the embedded one)."""
    from psycopg.conninfo import make_conninfo

    from ..api import resolve_dsn
    from ..demo import run_demo

    admin = make_conninfo(resolve_dsn(dsn), dbname="postgres")
    run_demo(admin, cycles=cycles, history=history, batch=batch, console=console,
             explicit_dsn=bool(dsn), use_spark=use_spark, database=into)


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x.replace("_", "")) for x in text.split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r}: give comma-separated integers") from None


@main.command()
@click.option("--quick", is_flag=True, help="Small data, a few minutes: checks that it runs.")
@click.option("--workload", "workloads",
              type=click.Choice(["transfers", "tpch", "nexmark", "all", "drift"]),
              default="all", show_default=True,
              help="all: transfers, tpch and nexmark; drift: a layout against data that "
                   "drifts, static and adaptive (argus.bench.drift).")
@click.option("--history", type=int, help="Transfers loaded first (default 100,000).")
@click.option("--queries", help="Query counts to measure at, e.g. 100,150,250,500,1000.")
@click.option("--batches", help="Batch sizes, e.g. 100,1000,10000.")
@click.option("--repeat", type=int, help="Batches per measurement (the median is kept).")
@click.option("--tpch-scale", type=float, help="TPC-H scale factor (default 0.1).")
@click.option("--tpch-queries",
              help="TPC-H query numbers, e.g. 1,3,6 (default: all but 17 and 20).")
@click.option("--nexmark-events", type=int,
              help="Nexmark events loaded first (default 100,000).")
@click.option("--per-query", type=int,
              help="Transfer queries compared one by one (0: no query alone, TPC-H's and "
                   "Nexmark's neither).")
@click.option("--register", type=int,
              help="Transfer queries registered one after another, each timed (default 1000).")
@click.option("--durability", type=click.Choice(["derived", "logged"]),
              help="The networks' durability (default: a new database's, derived).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("argus-bench"),
              show_default=True, help="Where bench.md and bench.png are written.")
@dsn_option
@handle_errors
def bench(quick: bool, workloads: str, history: int | None, queries: str | None,
          batches: str | None, repeat: int | None, tpch_scale: float | None,
          tpch_queries: str | None, nexmark_events: int | None, per_query: int | None,
          register: int | None, durability: str | None, out: Path, dsn: str | None) -> None:
    """Benchmark argus against re-running the queries, REFRESH MATERIALIZED VIEW,
    pg_ivm (when installed) and the floor, in one run (database argus_bench)."""
    import dataclasses

    from ..bench import Options, run
    from ..bench import TPCH_QUERIES

    if workloads == "drift":
        from ..bench import drift

        cycles = 30 if quick else 60
        console.print(drift.run(out, dsn, cycles=cycles, log=lambda text: console.print(
            f"[dim]{text}[/]")), markup=False, highlight=False)
        console.print(f"report: {out / 'drift.md'}, plot: {out / 'drift.png'}")
        return
    options = Options.quick(out) if quick else Options(out=out)
    tpch = _ints(tpch_queries) if tpch_queries else None
    unknown = sorted(set(tpch or ()) - set(TPCH_QUERIES))
    if unknown:
        raise click.BadParameter(
            f"TPC-H has no query {', '.join(map(str, unknown))} (its queries are numbered "
            f"{TPCH_QUERIES[0]} to {TPCH_QUERIES[-1]})", param_hint="--tpch-queries")
    changes = {"workloads": Options.workloads if workloads == "all" else (workloads,),
               "history": history, "counts": _ints(queries) if queries else None,
               "sizes": _ints(batches) if batches else None, "repeat": repeat,
               "tpch_scale": tpch_scale, "tpch_queries": tpch, "per_query": per_query,
               "register": register, "nexmark_events": nexmark_events,
               "durability": durability}
    options = dataclasses.replace(options, **{k: v for k, v in changes.items() if v is not None})
    results = run(options, dsn, log=lambda text: console.print(f"[dim]{text}[/]"))
    for notice in results.notices:
        console.print(notice, style="yellow", markup=False)
    console.print((out / "bench.md").read_text(), markup=False, highlight=False)
    console.print(f"report: {out / 'bench.md'}"
                  + (f", plot: {out / 'bench.png'}" if (out / "bench.png").exists() else ""))


# -- data generators -----------------------------------------------------------------

@main.group()
def gen() -> None:
    """Generate data sets for demos and benchmarks (Parquet files)."""


@gen.command("transfers")
@click.option("--rows", default=100_000, show_default=True,
              help="Transfers generated; some large ones are then followed by a transfer "
                   "from their receiver (the chains the demo's queries look for).")
@click.option("--first-id", default=1, show_default=True)
@click.option("--accounts", default=2000, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--master", default=None, help="Spark master URL (default: local[2]).")
@handle_errors
def gen_transfers(rows: int, first_id: int, accounts: int, out: Path, master: str | None) -> None:
    """FedWire-like transfers, generated by a Spark job."""
    from ..spark import session
    from ..bench.sparkgen import transfers

    spark = session(master, jdbc=False)  # (it writes files: no JDBC driver needed)
    transfers(spark, rows, first_id=first_id, accounts=accounts).write.mode(
        "overwrite").parquet(str(out))
    written = spark.read.parquet(str(out)).count()
    console.print(f"{written:,} transfers written to {out}: {rows:,} and {written - rows:,} "
                  "follow-ups of large ones (load them: argus load --stream transfers "
                  f"{out})")


@gen.command("tpch")
@click.option("--scale", default=0.1, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--batches", default=10, show_default=True, help="Refresh batches.")
@click.option("--share", default=0.001, show_default=True, type=float,
              help="Share of the orders in each refresh batch.")
@click.option("--out", type=click.Path(path_type=Path), required=True)
@handle_errors
def gen_tpch(scale: float, batches: int, share: float, out: Path) -> None:
    """TPC-H tables (DuckDB's generator) and refresh batches of new orders."""
    from ..bench.tpch import generate

    data = generate(scale, out, batches, share)
    console.print(f"TPC-H scale {scale}: {len(data.initial)} tables and {len(data.refresh)} "
                  f"refresh batches (orders + lineitem) in {out}")
