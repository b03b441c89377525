"""The error tree. Every refusal names what is wrong; none leaves changes behind."""

from __future__ import annotations


class ArgusError(Exception):
    """Base class of every error argus raises on purpose."""


class InvalidNameError(ArgusError):
    """A query, stream or column name that cannot be used."""


class CatalogError(ArgusError):
    """The catalog is missing, too new, or does not know an object."""


class UnknownStreamError(CatalogError):
    pass


class UnknownQueryError(CatalogError):
    pass


class DuplicateNameError(CatalogError):
    pass


class QueryError(ArgusError):
    """A query that cannot be registered."""


class QuerySyntaxError(QueryError):
    pass


class UnknownColumnError(QueryError):
    pass


class UnsupportedQueryError(QueryError):
    """A construct argus does not (yet) maintain incrementally."""

    def __init__(self, construct: str, detail: str = "") -> None:
        self.construct = construct
        message = f"{construct}: not supported in continuous queries"
        super().__init__(f"{message}; {detail}" if detail else message)


class QueryFailedError(QueryError):
    """A query isolated after one of its nodes failed in a cycle: its answer stands
    where it was until `argus retry`."""


class LoadError(ArgusError):
    """Rows that could not be loaded into a stream; nothing was loaded."""


class ChangesLostError(ArgusError):
    """A subscriber asked for changes its query's log no longer keeps (argus.subscriptions):
    it starts again from the answer."""


class CycleError(ArgusError):
    """A cycle that failed; it was rolled back and recorded in argus.runs."""


# (in argus.intact()'s message: a cycle refused for it rebuilds and runs again)
STATE_LOST = "state is being rebuilt after a crash"


class CycleInProgressError(CycleError):
    """Another cycle holds the lock on this database."""


class MigrationError(ArgusError):
    """A query's migration to a new layout failed and was rolled back: its old layout
    is intact."""


class SettingError(ArgusError):
    """An unknown setting, or a value it cannot take; nothing was changed."""


class ServerError(ArgusError):
    """The embedded PostgreSQL could not be started or reached."""


class PermissionDeniedError(ArgusError):
    """The session's role may not do this (the owner grants it: argus grant)."""
