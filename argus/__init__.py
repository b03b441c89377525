"""argus: incremental continuous queries on PostgreSQL."""

from .api import Argus, connect
from .cycle import CycleReport
from .errors import (ArgusError, CatalogError, ChangesLostError, CycleError, CycleInProgressError,
                     DuplicateNameError, InvalidNameError, LoadError, QueryError,
                     QueryFailedError, QuerySyntaxError, ServerError, SettingError,
                     UnknownColumnError, UnknownQueryError, UnknownStreamError,
                     UnsupportedQueryError)
from .registry import QueryInfo

__version__ = "0.1.0"

__all__ = [
    "Argus", "ArgusError", "CatalogError", "ChangesLostError", "CycleError",
    "CycleInProgressError",
    "CycleReport", "DuplicateNameError", "InvalidNameError", "LoadError", "QueryError",
    "QueryFailedError", "QueryInfo", "QuerySyntaxError", "ServerError", "SettingError",
    "UnknownColumnError", "UnknownQueryError", "UnknownStreamError", "UnsupportedQueryError",
    "connect", "__version__",
]
