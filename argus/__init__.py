"""argus: incremental continuous queries on PostgreSQL.

Argus, connect, CycleReport and QueryInfo are imported at their first use (PEP 562):
a command that only runs cycles (`argus run` from cron) starts without the planner and
the node compilers (argus.lean)."""

import importlib

from .errors import (ArgusError, CatalogError, ChangesLostError, CycleError, CycleInProgressError,
                     DuplicateNameError, InvalidNameError, LoadError, QueryError,
                     QueryFailedError, QuerySyntaxError, ServerError, SettingError,
                     UnknownColumnError, UnknownQueryError, UnknownStreamError,
                     UnsupportedQueryError)

__version__ = "0.1.0"

_LAZY = {"Argus": "api", "connect": "api", "CycleReport": "cycle", "QueryInfo": "registry"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Argus", "ArgusError", "CatalogError", "ChangesLostError", "CycleError",
    "CycleInProgressError",
    "CycleReport", "DuplicateNameError", "InvalidNameError", "LoadError", "QueryError",
    "QueryFailedError", "QueryInfo", "QuerySyntaxError", "ServerError", "SettingError",
    "UnknownColumnError", "UnknownQueryError", "UnknownStreamError", "UnsupportedQueryError",
    "connect", "__version__",
]
