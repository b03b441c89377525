"""`argus bench --quick` runs end to end on small data and reports (its timings are not
checked: benchmarks are not tests), and every argus answer it maintained equals the
query re-run from scratch."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import importlib
import pkgutil

import argus.bench
from argus.bench import Options, nexmark
from argus.cli import main

pytestmark = pytest.mark.usefixtures("bench_database")  # (not argus_bench: a user's name)


@pytest.mark.slow
def test_quick_bench_runs_and_reports(admin_dsn, tmp_path):
    pytest.importorskip("duckdb", reason="the TPC-H workload needs the tpch extra")
    result = CliRunner().invoke(main, ["bench", "--quick", "--out", str(tmp_path),
                                       "--dsn", admin_dsn])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "bench.md").read_text()
    for workload, queries in (("transfers", 25), ("tpch", len(Options.quick().tpch_queries)),
                              ("nexmark", len(nexmark.QUERIES))):
        assert f"| {workload} |" in report
        assert (f"Answers of all {queries:,} {workload} queries equal to the re-run ones "
                "after the last batch: yes.") in report
        # every node pays for its delta: no statement reads a history it should probe
        assert (f"Node audit of the {workload} network" in report
                and "statements flagged: 0 with 10 new rows, 0 with 1,000 new rows." in
                report.split(f"Node audit of the {workload} network")[1].split("\n")[0]), \
            report
    assert "| WAL per batch: argus / floor |" in report
    assert "## Each query alone" in report and "## Registration" in report
    assert "| re-run (temp) |" in report and "The five closest" in report
    fixed = report.split("## argus's fixed cost per batch, next to the floor")[1]
    for workload in ("transfers", "tpch", "nexmark"):  # the fixed cost next to the floor
        assert f"| {workload} |" in fixed.split("##")[0]
    for family in ("selection", "chain", "aggregate", "union"):  # every family compared alone
        assert f"| transfers | {family}_" in report
    assert "| nexmark | q20 |" in report
    assert "| transfers | 25 |" in report  # query number 25 of the registration run
    assert (tmp_path / "bench.png").stat().st_size > 10_000


def test_bench_refuses_tpch_queries_that_do_not_exist(tmp_path):
    result = CliRunner().invoke(main, ["bench", "--workload", "tpch", "--tpch-queries",
                                       "1,23,0", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "TPC-H has no query 0, 23" in result.output
    assert not (tmp_path / "bench.md").exists()


@pytest.mark.slow
def test_bench_runs_the_tpch_queries_asked_for_without_the_per_query_phase(admin_dsn, tmp_path):
    pytest.importorskip("duckdb", reason="the TPC-H workload needs the tpch extra")
    result = CliRunner().invoke(main, ["bench", "--workload", "tpch", "--tpch-scale", "0.01",
                                       "--tpch-queries", "6,12", "--per-query", "0",
                                       "--repeat", "1", "--out", str(tmp_path),
                                       "--dsn", admin_dsn])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "bench.md").read_text()
    assert "| tpch | 2 |" in report
    assert "Data: tpch, scale factor 0.01, queries Q6, Q12, batches of " in report
    assert ("Answers of all 2 tpch queries equal to the re-run ones after the last batch: "
            "yes.") in report
    assert "## Each query alone" not in report


def test_every_focused_benchmark_reads_its_options(capsys):
    """The benchmarks run as `python -m argus.bench.<name>` (docs/performance.md cites
    their figures) import and describe their options, so that a change to the code they
    call cannot leave one broken until someone measures again."""
    scripts = [m.name for m in pkgutil.iter_modules(argus.bench.__path__)
               if hasattr(importlib.import_module(f"argus.bench.{m.name}"), "main")]
    assert {"tpch_refresh", "topk", "drift_shared", "pathway_nexmark"} <= set(scripts)
    for name in scripts:
        module = importlib.import_module(f"argus.bench.{name}")
        with pytest.raises(SystemExit) as exit_, pytest.MonkeyPatch.context() as patch:
            patch.setattr("sys.argv", [name, "--help"])
            module.main()
        assert exit_.value.code == 0 and "--dsn" in capsys.readouterr().out, name
