"""A bounded run of the differential fuzzer (tests/fuzz.py) on every CI run: a few
seeds, each in a fresh database. `python -m tests.fuzz --minutes 30` runs it long."""

from __future__ import annotations

import os

import pytest

from . import fuzz

SEEDS = [int(s) for s in os.environ.get("ARGUS_FUZZ_SEEDS", "1,2,3").split(",")]
STEPS = int(os.environ.get("ARGUS_FUZZ_STEPS", "120"))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_fuzzer_finds_nothing(fresh_dsn, seed):
    stats = fuzz.run(fresh_dsn, seed, steps=STEPS)
    assert stats.cycles > 0 and stats.queries > 0
