"""What every benchmark script shares: its command line and a fresh database to run in
(the same one `argus bench` uses)."""

from __future__ import annotations

import argparse

from argus.bench.runner import fresh_database

__all__ = ["arguments", "fresh_database"]


def arguments(doc: str, **options: int) -> argparse.Namespace:
    """--dsn plus integer options with their defaults, e.g. history=100_000."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dsn", default=None,
                        help="server to run on (default: $ARGUS_DSN, else the embedded one)")
    for name, default in options.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    return parser.parse_args()
