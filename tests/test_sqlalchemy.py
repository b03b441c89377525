"""SQLAlchemy where Python data code is (argus.alchemy): an Engine to connect with, a
Table to declare a stream, a Core select to register, reflected answers to read — all
against the real server, answers checked by the oracle."""

from __future__ import annotations

import datetime as dt

import pytest
from psycopg.conninfo import conninfo_to_dict

import argus
from argus.errors import QueryError

from .oracle import Oracle

sa = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed")


def test_an_engine_a_table_and_a_select_make_a_continuous_query(fresh_dsn):
    parts = conninfo_to_dict(fresh_dsn)
    engine = sa.create_engine(sa.engine.URL.create(
        "postgresql+psycopg", username=parts.get("user"), password=parts.get("password"),
        host=parts.get("host"), port=parts.get("port"), database=parts["dbname"]))
    metadata = sa.MetaData()
    transfers = sa.Table("transfers", metadata,
                         sa.Column("tran_id", sa.BigInteger, nullable=False),
                         sa.Column("sender", sa.Text), sa.Column("amount", sa.Numeric(14, 2)),
                         sa.Column("at", sa.DateTime(timezone=True)))
    with argus.connect(engine) as db:  # an Engine, not a DSN
        oracle = Oracle(db)
        schema = oracle.create_stream(transfers, time_column="at")  # db.create_stream
        assert dict(schema.columns)["amount"] == "numeric(14,2)"
        assert "tran_id" in schema.not_null
        big = (sa.select(transfers.c.sender, sa.func.sum(transfers.c.amount).label("total"))
               .where(transfers.c.amount > 100, transfers.c.sender != "O'Brien")
               .group_by(transfers.c.sender))
        oracle.register("big", big)  # compiled with its values as quoted literals
        assert "'O''Brien'" in db.query("big").sql
        at = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
        oracle.insert("transfers", [(1, "a", 500, at), (2, "O'Brien", 900, at),
                                    (3, "a", 50, at), (4, "b", 101, at)])
        oracle.run()
        answer = db.results_table("big")
        with db.engine.connect() as conn:  # a reflected view: select, filter, join
            rows = conn.execute(sa.select(answer).where(answer.c.total > 200)).all()
            assert [tuple(r) for r in rows] == [("a", 500)]
            changes = db.changes_table("big")
            assert "argus_sign" in changes.c
            assert len(conn.execute(sa.select(changes)).all()) == 2
        with pytest.raises(QueryError, match="not sqlite"):
            argus.connect(sa.engine.make_url("sqlite://"))


def test_what_sqlalchemy_hands_in_is_read_exactly_or_refused(oracle):
    """A `%` stays one (named parameters), a parameter without a value is an error, a
    password with a space connects as written, other databases are refused."""
    from argus import alchemy

    oracle.create_stream("t", {"id": "int", "s": "text"})
    t = sa.table("t", sa.column("id"), sa.column("s"))
    oracle.register("pct", sa.select(t.c.id).where(sa.or_(t.c.s == "100%", t.c.s.like("a%"))))
    oracle.insert("t", [(1, "100%"), (2, "100%%"), (3, "abc"), (4, "b%")])
    oracle.run()
    assert sorted(oracle.db.results("pct")) == [(1,), (3,)]
    with pytest.raises(QueryError, match="cannot be written as SQL"):
        oracle.db.register_query("unbound", sa.select(t.c.id).where(t.c.id == sa.bindparam("x")))
    url = sa.engine.URL.create("postgresql+psycopg", username="u", password="secret word",
                               host="h", database="d")
    assert conninfo_to_dict(alchemy.dsn_of(url))["password"] == "secret word"
    for other in ("sqlite:///x.db", "mysql+pymysql://u@h/d"):
        with pytest.raises(QueryError, match="argus runs on PostgreSQL"):
            argus.connect(other)
