"""Where argus connects: a DSN given, $ARGUS_DSN, else the embedded server. Apart
from argus.api so that a command resolves it without importing the planner."""

from __future__ import annotations

import os

from . import alchemy


def resolve_dsn(dsn) -> str:
    """An explicit DSN (or SQLAlchemy Engine or URL), else $ARGUS_DSN, else the embedded
    server (started if needed)."""
    if alchemy.is_url_or_engine(dsn) or (isinstance(dsn, str) and "://" in dsn and not
                                         dsn.startswith(("postgresql://", "postgres://"))):
        return alchemy.dsn_of(dsn)  # (an SQLAlchemy URL, or not PostgreSQL's: refused)
    if dsn:
        return dsn
    if os.environ.get("ARGUS_DSN"):
        return os.environ["ARGUS_DSN"]
    from .embedded import default_server

    return default_server().ensure_running()
