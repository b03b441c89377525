"""`argus bench`: argus against the real alternatives, in one run on one server.

For each workload (argus.bench.workloads) the data is loaded once; then every method
(argus.bench.methods) is timed on the same batches, with the queries registered in
steps (argus.bench.runner), and each query alone against re-running it. The report
(argus.bench.report) is a Markdown table and a plot.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import report, runner, workloads
from .workloads import BENCH_TPCH, TPCH_QUERIES as TPCH_QUERIES


@dataclass(frozen=True)
class Options:
    workloads: tuple[str, ...] = ("transfers", "tpch", "nexmark")
    history: int = 100_000
    counts: tuple[int, ...] = (100, 150, 250, 500, 1000)
    sizes: tuple[int, ...] = (100, 1_000, 10_000)
    repeat: int = 3
    tpch_scale: float = 0.1
    tpch_queries: tuple[int, ...] = BENCH_TPCH
    nexmark_events: int = 100_000
    per_query: int = 20  # transfer queries compared alone (all TPC-H queries are; 0: none)
    register: int = 1000  # transfer queries registered one after another, each timed
    rerun: bool = True  # each query alone measured re-run by argus too (where it may pay)
    out: Path = Path("argus-bench")
    durability: str | None = None  # the networks' (None: a new database's default)

    @classmethod
    def quick(cls, out: Path = Path("argus-bench")) -> Options:
        """Small data, for CI: checks that everything runs, not how fast."""
        return cls(history=5_000, counts=(10, 25), sizes=(100, 1_000), repeat=2,
                   tpch_scale=0.01, tpch_queries=(1, 2, 3, 6, 11, 13, 15, 16, 18, 21, 22),
                   nexmark_events=5_000, per_query=4, register=25, rerun=False, out=out)


def sample_families(names: list[str], count: int) -> list[str]:
    """`count` queries taken from each family in turn (a name is family_number), so
    that every kind of query is compared alone, not only the most frequent ones."""
    families: dict[str, list[str]] = {}
    for name in names:
        families.setdefault(name.rsplit("_", 1)[0], []).append(name)
    order = [family[i] for i in range(max(map(len, families.values()), default=0))
             for family in families.values() if i < len(family)]
    return order[:count]


def run(options: Options, dsn: str | None = None, log=print) -> runner.Results:
    results = runner.Results()
    if "transfers" in options.workloads:
        w = workloads.transfers(options.history, max(max(options.counts), options.register))
        results.data.append(f"transfers, {options.history:,} rows of history")
        runner.scaling(w, dsn, options.counts, options.sizes, options.repeat, results, log,
                       options.durability)
        sample = sample_families([name for name, _ in w.queries], options.per_query)
        if sample:  # --per-query 0: no second load of the history
            runner.per_query(w, dsn, sample, options.sizes, options.repeat, results, log,
                             options.rerun, options.durability)
        if options.register:
            runner.registration(w, dsn, options.register, results, log)
    if "tpch" in options.workloads:
        n = len(options.tpch_queries)
        # batches: the scaling step's, and each query's alone, incremental and re-run
        w = workloads.tpch(options.tpch_scale,
                           batches=options.repeat * (1 + (2 if options.rerun else 1) * n),
                           only=options.tpch_queries)
        results.data.append(f"tpch, scale factor {options.tpch_scale:g}, queries "
                            + ", ".join(f"Q{q}" for q in options.tpch_queries)
                            + f", batches of {w.sizes[0]:,} new orders with their line items")
        runner.scaling(w, dsn, (n,), w.sizes, options.repeat, results, log,
                       options.durability)
        if options.per_query:
            runner.per_query(w, dsn, [name for name, _ in w.queries], w.sizes,
                             options.repeat, results, log, options.rerun, options.durability)
    if "nexmark" in options.workloads:
        w = workloads.nexmark(options.nexmark_events)
        results.data.append(f"nexmark, {options.nexmark_events:,} events of history, queries "
                            + ", ".join(name for name, _ in w.queries)
                            + ", batches of the next events")
        runner.scaling(w, dsn, (len(w.queries),), options.sizes, options.repeat, results, log,
                       options.durability)
        if options.per_query:
            runner.per_query(w, dsn, [name for name, _ in w.queries], options.sizes,
                             options.repeat, results, log, options.rerun, options.durability)
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "bench.md").write_text(report.markdown(results, "argus bench"))
    if not report.plot(results, options.out / "bench.png"):
        results.notices.append("no plot: matplotlib is not installed (pip install "
                               "'argus[dev]')")
    return results
