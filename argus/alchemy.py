"""SQLAlchemy, where Python data code already is: an Engine or URL as the database to
connect to, a Core (or ORM) `select()` as a query's text, a `Table` as a stream's
declaration, and the answers and changes as reflected Tables (to join, filter, or read
with pandas). SQLAlchemy is optional (`pip install 'argus[sqlalchemy]'`); nothing here
imports it until one of its objects is handed in or asked for.
"""

from __future__ import annotations

from typing import Any

from .errors import QueryError


def is_url_or_engine(value: Any) -> bool:
    return hasattr(value, "render_as_string") or (hasattr(value, "url")
                                                  and hasattr(value, "dialect"))


def dsn_of(value: Any) -> str:
    """A libpq DSN (key=value: a space or a quote in a password stays whole) of an
    SQLAlchemy Engine, URL, or URL string naming a driver (`postgresql+psycopg://…`)."""
    from psycopg.conninfo import make_conninfo
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(value.url if hasattr(value, "dialect") else value)
    except ArgumentError as exc:
        raise QueryError(f"not a database URL: {exc}") from None
    if url.get_backend_name() != "postgresql":
        raise QueryError(f"argus runs on PostgreSQL, not {url.get_backend_name()}")
    parts = {"host": url.host, "port": url.port, "user": url.username,
             "password": url.password, "dbname": url.database, **url.query}
    return make_conninfo(**{k: v for k, v in parts.items() if v is not None})


def is_clause(query: Any) -> bool:
    return not isinstance(query, str) and (hasattr(query, "compile")
                                           or hasattr(query, "statement"))


def sql_of(query: Any) -> str:
    """A Core or ORM select (or a legacy ORM Query, or text()) as PostgreSQL SQL, its
    parameters as literals quoted by SQLAlchemy's PostgreSQL dialect (named parameters:
    no `%` is doubled): a continuous query has no parameters, so one without a value
    is an error, not a NULL."""
    import warnings

    from sqlalchemy.dialects import postgresql
    from sqlalchemy.exc import SAWarning

    query = getattr(query, "statement", query)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SAWarning)
            return str(query.compile(dialect=postgresql.dialect(paramstyle="named"),
                                     compile_kwargs={"literal_binds": True}))
    except Exception as exc:  # a parameter without a value, a value with no literal form
        raise QueryError(f"the SQLAlchemy query cannot be written as SQL text: {exc}") from None


def is_table(value: Any) -> bool:
    value = getattr(value, "__table__", value)  # (an ORM class: its table)
    return hasattr(value, "columns") and hasattr(value, "fullname") and hasattr(value, "c")


def table_of(value: Any) -> Any:
    return getattr(value, "__table__", value)


def columns_of(table: Any) -> dict[str, str]:
    """A Table's columns as PostgreSQL types (NOT NULL kept)."""
    from sqlalchemy.dialects import postgresql

    dialect = postgresql.dialect()
    return {c.name: c.type.compile(dialect=dialect) + ("" if c.nullable else " NOT NULL")
            for c in table.columns}


def engine_for(dsn: str):
    """An Engine on the same database, through psycopg 3."""
    import psycopg
    from sqlalchemy import create_engine

    return create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn))


def reflected(engine, schema: str, name: str):
    from sqlalchemy import MetaData, Table

    return Table(name, MetaData(schema=schema), autoload_with=engine)
