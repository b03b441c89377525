"""The benchmark's workloads: streams, their history, batches of new rows, queries.

- transfers: the FedWire-like stream (argus.bench.datagen) and ARGUS-like families of related
  queries (argus.bench.families); any history size and batch size.
- tpch: TPC-H from DuckDB's generator (argus.bench.tpch), the TPC-H queries argus maintains
  (ORDER BY / LIMIT stripped), and refresh batches of new orders with their line items
  (a share of the orders each, 0.1% by default, as TPC-H's RF1).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlglot

from .datagen import TRANSFER_COLUMNS, TransferGenerator
from .families import transfer_queries
from ..trees import DIALECT

# TPC-H's queries: argus maintains all 22 incrementally.
TPCH_QUERIES = tuple(range(1, 23))
# The benchmark's by default: not Q17 and Q20, whose correlated subqueries PostgreSQL runs
# as a scan of lineitem per outer row, so that the baselines' re-runs take minutes each
# at scale 0.1 (ask for them with --tpch-queries).
BENCH_TPCH = tuple(q for q in TPCH_QUERIES if q not in (17, 20))


@dataclass
class Workload:
    name: str
    streams: dict[str, dict[str, str]]  # stream -> column -> type
    time_columns: dict[str, str]
    queries: list[tuple[str, str]]  # (name, SQL)
    history: Callable[[], Iterator[dict[str, list[tuple]]]]  # the initial rows, in chunks
    batch: Callable[[int], dict[str, list[tuple]]]  # new rows per stream
    sizes: tuple[int, ...] | None = None  # batch sizes the workload has (None: any)


def transfers(history: int, queries: int, seed: int = 1, loose: int = 0) -> Workload:
    """Batches continue the stream after the history most recently loaded; `loose`
    loose chains (argus.bench.families.loose_chain) follow the queries."""
    state = {}

    def chunks() -> Iterator[dict[str, list[tuple]]]:
        state["gen"] = gen = TransferGenerator(seed=3)
        left = history
        while left > 0:
            n = min(left, 100_000)
            left -= n
            yield {"transfers": gen.batch(n)}

    return Workload("transfers", {"transfers": dict(TRANSFER_COLUMNS)},
                    {"transfers": "tran_date"}, transfer_queries(queries, seed, loose), chunks,
                    lambda size: {"transfers": state["gen"].batch(size)})


def tpch(scale: float, batches: int, share: float = 0.001,
         only: tuple[int, ...] = TPCH_QUERIES) -> Workload:
    """Every batch is the next of `batches` refresh batches of `share` of the orders."""
    from . import tpch as generator

    root = Path(tempfile.mkdtemp(prefix="argus-bench-tpch-"))
    atexit.register(shutil.rmtree, root, True)  # (read until the process ends)
    data = generator.generate(scale, root, batches=batches, share=share)
    con = generator._duckdb()
    texts = dict(con.execute("SELECT query_nr, query FROM tpch_queries()").fetchall())
    refresh = iter(data.refresh)

    def rows(path: Path) -> list[tuple]:
        return con.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()

    def chunks() -> Iterator[dict[str, list[tuple]]]:
        for table, path in data.initial.items():
            yield {table: rows(path)}

    def next_batch(_size: int) -> dict[str, list[tuple]]:
        files = next(refresh, None)
        if files is None:
            raise RuntimeError(f"only {batches} TPC-H refresh batches were generated")
        return {"orders": rows(files["orders"]), "lineitem": rows(files["lineitem"])}

    (orders,) = con.execute("SELECT count(*) FROM read_parquet(?)",
                            [str(data.refresh[0]["orders"])]).fetchone()
    return Workload("tpch", data.columns, {"orders": "o_orderdate", "lineitem": "l_shipdate"},
                    [(f"tpch_q{n:02d}", continuous(texts[n])) for n in only], chunks,
                    next_batch, sizes=(orders,))


def continuous(text: str, top_k: bool = False) -> str:
    """A TPC-H query (DuckDB's text) as a continuous query: PostgreSQL dialect, without
    its top-level ORDER BY, and without its LIMIT unless `top_k` (then ORDER BY … LIMIT
    stays, a Top-K; an ORDER BY alone goes)."""
    tree = sqlglot.parse_one(text, read="duckdb")
    if not (top_k and tree.args.get("limit") is not None):
        tree.set("order", None)
        tree.set("limit", None)
    return tree.sql(dialect=DIALECT)


def nexmark(events: int, seed: int = 1) -> Workload:
    """The Nexmark queries argus maintains over `events` events of history; batches are
    the next events (persons, auctions and bids mixed as the generator makes them)."""
    from . import nexmark as model

    state = {}

    def chunks() -> Iterator[dict[str, list[tuple]]]:
        state["gen"] = gen = model.NexmarkGenerator(seed)
        left = events
        while left > 0:
            n = min(left, 100_000)
            left -= n
            yield gen.batch(n)

    return Workload("nexmark", model.COLUMNS, {name: "date_time" for name in model.COLUMNS},
                    list(model.QUERIES.items()), chunks,
                    lambda size: state["gen"].batch(size))
