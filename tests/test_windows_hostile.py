"""Windows and event time under adversarial use (issue 27): windows over groups, horizon
boundaries, the smallest integers leaving sums, band joins across time zones at daylight
saving changes, and casts of the clock. Every case is checked by the oracle after every
cycle; the session's time zone is one with daylight saving time."""

from __future__ import annotations

import datetime as dt

import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import argus
from argus import QueryError


@pytest.fixture
def new_york(oracle):
    oracle.conn.execute("SET TimeZone = 'America/New_York'")  # the oracle's from scratch
    oracle.db.configure(time_zone="America/New_York")  # argus's cycles and registrations
    return oracle


def test_a_window_over_groups_keeps_their_counts(oracle):
    oracle.create_stream("s", {"k": "int", "t": "timestamptz"}, time_column="t")
    oracle.register("recent", "SELECT k, count(*) AS n FROM s GROUP BY k "
                              "HAVING max(t) > argus_now() - interval '1 hour'")
    oracle.register("first", "SELECT k FROM (SELECT k, min(t) AS first FROM s GROUP BY k) x "
                             "WHERE first > argus_now() - interval '30 minutes'")
    for batch in ([(1, "2024-03-01 12:00+00"), (1, "2024-03-01 12:01+00")],
                  [(2, "2024-03-01 13:30+00")], [(1, "2024-03-01 13:40+00")],
                  [(3, "2024-03-01 13:45+00"), (1, "2024-03-01 13:46+00")]):
        oracle.insert("s", batch)
        oracle.run()
    assert sorted(oracle.db.results("recent")) == [(1, 4), (2, 1), (3, 1)]
    assert sorted(oracle.db.results("first")) == [(2,), (3,)]  # key 1 was seen long ago


def test_a_horizon_at_exactly_the_bound_refuses_an_inclusive_window(oracle):
    oracle.create_stream("s", {"id": "int", "t": "timestamptz"}, time_column="t")
    oracle.register("w", "SELECT id FROM s WHERE t > argus_now() - interval '10 minutes'")
    oracle.insert("s", [(1, "2024-03-01 12:00+00"), (2, "2024-03-01 12:05+00"),
                        (3, "2024-03-01 12:10+00")])
    oracle.run()
    with pytest.raises(QueryError, match="purged"):  # needs the row at exactly 12:00
        oracle.register("w2", "SELECT id FROM s WHERE t >= argus_now() - interval '10 minutes'")
    oracle.insert("s", [(4, "2024-03-01 12:20+00")])
    oracle.run()  # purged to t > 12:10: the same window at the same clock is refused again,
    with pytest.raises(QueryError, match="purged"):
        oracle.register("w2", "SELECT id FROM s WHERE t >= argus_now() - interval '10 minutes'")
    # a narrower one starts after the horizon
    oracle.register("w3", "SELECT id FROM s WHERE t >= argus_now() - interval '5 minutes'")


@pytest.mark.parametrize("pg_type, smallest", [("int", -2**31), ("bigint", -2**63),
                                               ("smallint", -2**15)])
def test_the_smallest_integer_leaves_a_sum(oracle, pg_type, smallest):
    oracle.create_stream("s", {"i": pg_type, "t": "timestamptz"}, time_column="t")
    oracle.register("total", "SELECT sum(i) AS s, avg(i) AS a, count(i) AS n FROM s "
                             "WHERE t > argus_now() - interval '10 minutes'")
    oracle.insert("s", [(smallest, "2024-03-01 12:00+00"), (smallest, "2024-03-01 12:01+00"),
                        (5, "2024-03-01 12:02+00")])
    oracle.run()
    oracle.insert("s", [(7, "2024-03-01 12:30+00")])
    oracle.run()  # the smallest values leave: retracted, no overflow
    assert oracle.db.results("total")[0][0] == 7


def test_a_band_join_between_timestamptz_and_timestamp_across_fall_back(new_york):
    """PostgreSQL compares a timestamp with a timestamptz in the session's zone: the
    window is not moved across that conversion (it is not exact at a daylight saving
    change), so the pair at the change is found."""
    new_york.create_stream("a", {"id": "int", "t": "timestamptz"}, time_column="t")
    new_york.create_stream("b", {"id": "int", "ts": "timestamp"})
    new_york.register("band", "SELECT a.id, b.id AS bid FROM a JOIN b "
                              "ON a.t BETWEEN b.ts AND b.ts + interval '30 minutes'")
    new_york.insert("b", [(10, "2024-11-03 00:45"), (11, "2024-11-03 01:10"),
                          (12, "2024-03-10 01:50")])
    new_york.run()
    new_york.insert("a", [(1, "2024-11-03 05:30+00"), (2, "2024-11-03 05:50+00"),
                          (3, "2024-11-03 06:20+00"), (4, "2024-03-10 07:10+00")])
    new_york.run()
    assert (1, 10) in new_york.db.results("band")


def test_a_cast_of_the_clock_is_not_a_rising_bound(new_york):
    """`tod > argus_now()::time` wraps every day, and `ts > argus_now()::timestamp - …`
    goes back an hour at fall-back: neither may purge, both stay exact."""
    new_york.create_stream("e", {"id": "int", "t": "timestamptz", "tod": "time",
                                 "ts": "timestamp"}, time_column="t")
    new_york.register("later_today", "SELECT id FROM e WHERE tod > (argus_now())::time")
    new_york.register("local", "SELECT id FROM e WHERE ts > (argus_now())::timestamp "
                               "- interval '30 minutes'")
    new_york.register("day", "SELECT id FROM e WHERE t > argus_now() - interval '1 day'")
    rows = [(1, "2024-11-03 04:50+00", "23:00", "2024-11-03 00:45"),
            (2, "2024-11-03 05:40+00", "01:00", "2024-11-03 01:20"),
            (3, "2024-11-03 06:10+00", "02:00", "2024-11-03 01:05")]
    for row in rows:
        new_york.insert("e", [row])
        new_york.run()
    new_york.insert("e", [(4, "2024-11-04 06:00+00", "00:30", "2024-11-04 01:00")])
    new_york.run()
    assert new_york.conn.execute("SELECT count(*) FROM argus_streams.e").fetchone() == (4,)


@pytest.mark.parametrize("kind", ["timestamp", "date"])
def test_event_times_are_one_instant_whatever_zone_the_cycle_runs_in(oracle, fresh_dsn, kind):
    """A timestamp or date event time is read in settings.time_zone: a cycle run from a
    session in another zone (a cron job with PGTZ set) moves the clock, admits rows and
    ages windows as the database's own sessions would, and leaves its session's zone as
    it was. (Run from UTC-12, the clock once moved 12 hours too far, for good.)"""
    db = oracle.db
    db.configure(max_clock_lead="1 hour")
    oracle.create_stream("s", {"id": "bigint", "t": kind}, time_column="t")
    oracle.register("recent", "SELECT id FROM s WHERE t > argus_now() - interval '1 hour'")
    oracle.register("n", "SELECT count(*) FROM s")
    oracle.insert("s", [(1, dt.datetime(2024, 1, 1, 12) if kind == "timestamp"
                         else dt.date(2024, 1, 1))])
    oracle.run()
    zone = "Etc/GMT+12" if db.conn.execute("SHOW TimeZone").fetchone()[0] != "Etc/GMT+12" \
        else "Etc/GMT-12"
    with argus.connect(make_conninfo(fresh_dsn, options=f"-c TimeZone={zone}")) as far:
        # in the database's zone: 30 minutes ahead of the server's clock (admitted)
        (soon,) = db.conn.execute(sql.SQL("SELECT (localtimestamp + interval '30 minutes')"
                                          "::{}").format(sql.SQL(kind))).fetchone()
        oracle.insert("s", [(2, dt.datetime(2024, 1, 1, 12, 30) if kind == "timestamp"
                             else dt.date(2024, 1, 2)), (3, soon)])
        assert oracle.run(far.run).quarantined == {}
        assert far.conn.execute("SHOW TimeZone").fetchone()[0] == zone
    (clock,) = db.conn.execute("SELECT argus.clock_now() = max(t)::timestamptz FROM "
                               "argus_streams.s").fetchone()
    assert clock


def test_values_are_the_same_text_whatever_styles_the_cycle_runs_with(oracle, fresh_dsn):
    """Casts to text follow the session's DateStyle and IntervalStyle: a cycle run from a
    session with other styles (PGDATESTYLE) would mix two spellings in one answer. Cycles
    and registrations evaluate with PostgreSQL's defaults, and give the caller's settings
    back, even inside the caller's own transaction."""
    oracle.create_stream("s", {"id": "bigint", "t": "timestamp", "span": "interval"})
    oracle.register("texts", "SELECT t::text AS at, span::text AS span, count(*) AS n "
                             "FROM s GROUP BY 1, 2")  # stored: a view would be read as it is
    oracle.insert("s", [(1, dt.datetime(2024, 3, 1, 12), dt.timedelta(days=1, hours=2))])
    oracle.run()
    styles = "-c DateStyle=SQL,DMY -c IntervalStyle=sql_standard -c TimeZone=Asia/Tokyo"
    with argus.connect(make_conninfo(fresh_dsn, options=styles)) as styled:
        def cycle():
            with styled.conn.transaction():
                report = styled.run()
                assert styled.conn.execute("SELECT current_setting('DateStyle'), "
                                           "current_setting('TimeZone')").fetchone() == (
                    "SQL, DMY", "Asia/Tokyo")
            return report

        with styled.conn.transaction():
            styled.register_query("backfilled", "SELECT t::text AS at, count(*) AS n "
                                                "FROM s GROUP BY 1")  # as a cycle's
            assert styled.conn.execute("SELECT current_setting('DateStyle')").fetchone() \
                == ("SQL, DMY",)
        oracle.insert("s", [(2, dt.datetime(2024, 3, 2, 12), dt.timedelta(minutes=5))])
        oracle.run(cycle)


def test_the_time_zone_changes_only_to_one_postgresql_takes_and_before_any_query(db):
    """An abbreviation (PDT) passes timezone() but not TimeZone: every cycle would fail.
    A query registered after a change would share nodes computed in the old zone."""
    with pytest.raises(argus.SettingError, match="PDT"):
        db.configure(time_zone="PDT")
    assert db.configure(time_zone="Asia/Tokyo")["time_zone"] == "Asia/Tokyo"
    db.create_stream("s", {"id": "bigint", "t": "timestamp"}, time_column="t")
    db.register_query("q", "SELECT id FROM s WHERE t::date = '2024-03-10'")
    with pytest.raises(argus.SettingError, match="no query is registered"):
        db.configure(time_zone="UTC")
    assert db.settings()["time_zone"] == "Asia/Tokyo"
    db.run()
