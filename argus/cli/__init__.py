"""The `argus` command line: the group (base) and its commands, one module per area."""

from . import admin, cycles, inputs, queries, tools  # noqa: F401  (they join the group)
from .base import main

__all__ = ["main"]
