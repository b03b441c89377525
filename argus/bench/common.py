"""What every benchmark script shares: its command line, a fresh database to run in
(the same one `argus bench` uses), and timed cycles over a workload's batches."""

from __future__ import annotations

import argparse
import time

from argus.bench.runner import fresh_database

__all__ = ["arguments", "cycles", "fresh_database"]


def arguments(doc: str, **options: int | str | bool) -> argparse.Namespace:
    """--dsn plus options of their default's type, e.g. history=100_000 (a flag for
    False)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dsn", default=None,
                        help="server to run on (default: $ARGUS_DSN, else the embedded one)")
    for name, default in options.items():
        if default is False:
            parser.add_argument(f"--{name.replace('_', '-')}", action="store_true")
        else:
            parser.add_argument(f"--{name.replace('_', '-')}", type=type(default),
                                default=default)
    return parser.parse_args()


def cycles(db, workload, batch: int, n: int) -> list[float]:
    """`n` batches of `batch` rows loaded, each followed by a cycle: its ms."""
    out = []
    for _ in range(n):
        for stream, rows in workload.batch(batch).items():
            db.insert(stream, rows)
        started = time.perf_counter()
        db.run()
        out.append((time.perf_counter() - started) * 1000)
    return out
