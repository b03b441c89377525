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
    """A libpq DSN of an SQLAlchemy Engine, URL, or URL string naming a driver
    (`postgresql+psycopg://…`)."""
    from sqlalchemy.engine import make_url

    url = make_url(value.url if hasattr(value, "dialect") else value)
    if url.get_backend_name() != "postgresql":
        raise QueryError(f"argus runs on PostgreSQL, not {url.get_backend_name()}")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def is_clause(query: Any) -> bool:
    return hasattr(query, "compile") and hasattr(query, "selected_columns")


def sql_of(query: Any) -> str:
    """A Core or ORM select as PostgreSQL SQL, its parameters as literals (quoted by
    SQLAlchemy's PostgreSQL dialect): a continuous query has no parameters."""
    from sqlalchemy.dialects import postgresql

    try:
        return str(query.compile(dialect=postgresql.dialect(),
                                 compile_kwargs={"literal_binds": True}))
    except Exception as exc:  # a value with no literal form (a bound object, …)
        raise QueryError(f"the SQLAlchemy query cannot be written as SQL text: {exc}") from None


def is_table(value: Any) -> bool:
    return hasattr(value, "columns") and hasattr(value, "fullname") and hasattr(value, "c")


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
