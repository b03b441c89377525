"""The Spark pipeline: DataFrames and files into streams over JDBC, exactly once."""

from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
import sys
import textwrap

import psycopg
import pytest
from click.testing import CliRunner

import argus
from argus.loads import commit_staged, prepare_staging

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")
spark_mod = pytest.importorskip("argus.spark")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java", allow_module_level=True)
if spark_mod.jdbc_jar() is None:
    pytest.skip("no PostgreSQL JDBC jar (Debian: libpostgresql-jdbc-java)",
                allow_module_level=True)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    session = spark_mod.session()
    yield session
    session.stop()


@pytest.fixture
def events(db):
    db.create_stream("events", {"id": "bigint NOT NULL", "day": "date", "v": "numeric(10,2)"})
    db.register_query("big", "SELECT id, v FROM events WHERE v > 5")
    return db


def inbox(db) -> list[tuple]:
    return db.conn.execute("SELECT id, day, v FROM argus_inbox.events ORDER BY id").fetchall()


def test_a_dataframe_loads_exactly_once(spark, events, fresh_dsn):
    df = spark.createDataFrame([(1, "2024-01-01", 3.5), (2, "2024-01-02", 7.25)],
                               "id long, day string, v double")
    first = spark_mod.load(df, "events", fresh_dsn, load_id="batch-1")
    again = spark_mod.load(df, "events", fresh_dsn, load_id="batch-1")
    assert (first.rows, again.rows, again.duplicate) == (2, 0, True)
    assert len(inbox(events)) == 2
    events.run()
    assert sorted(events.results("big")) == [(2, 7.25)]
    assert events.conn.execute("SELECT count(*) FROM pg_tables "
                               "WHERE schemaname = 'argus_staging'").fetchone() == (0,)


def test_a_retried_partition_is_moved_once(spark, events, fresh_dsn):
    """Simulate a task that wrote its partition twice (retry, speculation)."""
    df = spark.createDataFrame([(i, "2024-01-01", float(i)) for i in range(100)],
                               "id long, day string, v double").repartition(4)
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        table = prepare_staging(conn, "events", "retry-1")
    url, props = spark_mod.jdbc_target(fresh_dsn)
    from pyspark.sql import functions as F

    tagged = df.select("id", "day", "v", F.spark_partition_id().alias("argus_part"),
                       F.monotonically_increasing_id().alias("argus_row")).cache()
    for _ in range(2):  # the same partitions, written twice
        tagged.write.mode("append").jdbc(url, table.as_string(events.conn), properties=props)
    with psycopg.connect(fresh_dsn, autocommit=True) as conn:
        result = commit_staged(conn, "events", "retry-1", "test")
    assert result.rows == 100 and len(inbox(events)) == 100


def test_a_job_killed_before_commit_leaves_nothing_and_can_rerun(events, fresh_dsn, tmp_path):
    """A Spark job killed after staging but before its commit: re-running it loads once."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import os, argus.spark as s
        import argus.loads as loads
        spark = s.session()
        df = spark.createDataFrame([(i, "2024-01-01", 1.0) for i in range(50)],
                                   "id long, day string, v double")
        if os.environ.get("CRASH"):
            loads.commit_staged = lambda *a, **k: os._exit(9)   # dies before committing
            s.commit_staged = loads.commit_staged
        s.load(df, "events", {fresh_dsn!r}, load_id="job-7")
    """))
    crashed = subprocess.run([sys.executable, str(script)], env={**os.environ, "CRASH": "1"})
    assert crashed.returncode == 9
    assert inbox(events) == []  # staged, never committed
    subprocess.run([sys.executable, str(script)], check=True)
    subprocess.run([sys.executable, str(script)], check=True)  # a second re-run: no-op
    assert len(inbox(events)) == 50


def test_schema_mismatches_fail_before_anything_is_loaded(spark, events, fresh_dsn):
    extra = spark.createDataFrame([(1, 2)], "id long, colour long")
    with pytest.raises(argus.LoadError, match="'colour' is not in stream 'events'"):
        spark_mod.load(extra, "events", fresh_dsn)
    wrong = spark.createDataFrame([(1, True)], "id long, day boolean")
    with pytest.raises(argus.LoadError, match="cannot feed date"):
        spark_mod.load(wrong, "events", fresh_dsn)
    no_id = spark.createDataFrame([("2024-01-01",)], "day string")
    with pytest.raises(argus.LoadError, match="NOT NULL columns missing .*id"):
        spark_mod.load(no_id, "events", fresh_dsn)
    assert inbox(events) == [] and events.loads() == []


@pytest.mark.parametrize("row, message", [
    ((1, "2024-02-30", 1.0), "date/time field value out of range"),
    ((None, "2024-01-01", 1.0), 'null value in column "id"'),
])
def test_a_bad_row_fails_the_load_and_names_it(spark, events, fresh_dsn, row, message):
    df = spark.createDataFrame([(5, "2024-01-01", 1.0), row], "id long, day string, v double")
    with pytest.raises(argus.LoadError, match=message):
        spark_mod.load(df, "events", fresh_dsn, load_id="bad-1")
    assert inbox(events) == [] and events.loads() == []


def test_argus_load_reads_a_csv_file_once(events, fresh_dsn, tmp_path, monkeypatch):
    data = tmp_path / "events.csv"
    data.write_text("id,day,v\n1,2024-01-01,9.5\n2,2024-01-02,1.5\n")
    from argus.cli import main

    def load():
        result = CliRunner().invoke(main, ["load", "--stream", "events", str(data),
                                           "--engine", "spark", "--dsn", fresh_dsn],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    load()
    monkeypatch.setattr(spark_mod, "session", None)  # the same file again: no Spark at all
    again = load()
    assert len(inbox(events)) == 2
    assert again.count("loaded before") == 1


def test_spark_reads_a_csv_as_postgresql_does(db, fresh_dsn, tmp_path):
    """Quotes doubled inside a quoted field, a backslash before the closing quote, a
    quoted line break, a quoted empty field: Spark's defaults (a backslash escapes, a
    line ends a record, "" is NULL) loaded other values than PostgreSQL's COPY, or
    failed (a helper)."""
    db.create_stream("notes", {"id": "bigint", "note": "text"})
    data = tmp_path / "notes.csv"
    data.write_text('id,note\n1,"hello, ""world"""\n2,"C:\\dir\\"\n3,"line1\nline2"\n4,plain\n'
                    '5,""\n6,\n')  # (5: an empty string; 6: NULL)
    spark_mod.load_file(str(data), "notes", fresh_dsn, fmt="csv")
    by_spark = db.conn.execute("SELECT id, note FROM argus_inbox.notes ORDER BY id").fetchall()
    db.conn.execute("DELETE FROM argus_inbox.notes")
    with db.conn.cursor() as cur, cur.copy("COPY argus_inbox.notes (id, note) FROM STDIN "
                                           "(FORMAT csv, HEADER true)") as copy:
        copy.write(data.read_bytes())
    assert by_spark == db.conn.execute(
        "SELECT id, note FROM argus_inbox.notes ORDER BY id").fetchall()
    assert by_spark[0] == (1, 'hello, "world"') and by_spark[2] == (3, "line1\nline2")


def test_a_file_loads_into_a_table_as_inserts(db, fresh_dsn, tmp_path):
    """A file's rows are inserts into a table (every such load failed on the inbox's
    change number, which staging lacked; a helper), and one of a key the table has
    already fails the load, saying so (a traceback before)."""
    db.create_table("notes", {"id": "bigint", "note": "text"}, primary_key=["id"])
    db.register_query("all_notes", "SELECT id, note FROM notes")
    data = tmp_path / "notes.csv"
    data.write_text("id,note\n1,a\n2,b\n")
    spark_mod.load_file(str(data), "notes", fresh_dsn, fmt="csv")
    db.run()
    data.write_text("id,note\n3,c\n2,d\n")  # 2 again: a file's rows are inserts
    with pytest.raises(argus.LoadError, match=r"nothing was loaded: an insert of the key "
                                              r"\(2\), which table notes has already"):
        spark_mod.load_file(str(data), "notes", fresh_dsn, fmt="csv")
    data.write_text("id,note\n3,c\n")
    spark_mod.load_file(str(data), "notes", fresh_dsn, fmt="csv")
    db.run()
    assert sorted(db.results("all_notes")) == [(1, "a"), (2, "b"), (3, "c")]


@pytest.mark.parametrize("text, message", [
    ('{"id": 1, "note": "a", "note": "b"}\n', "The column `note` already exists"),
    ('{"id": 1,\n "note": "a"}\n', "it is not JSON of one object per line"),
], ids=["a key twice", "over two lines"])
def test_malformed_json_is_refused_naming_the_file(db, fresh_dsn, tmp_path, text, message):
    """A traceback, or a column '_corrupt_record' the stream lacked, before (a helper)."""
    db.create_stream("notes", {"id": "bigint", "note": "text"})
    data = tmp_path / "notes.json"
    data.write_text(text)
    with pytest.raises(argus.LoadError, match=f"cannot load {data}, nothing was loaded: .*"
                                              + re.escape(message)):
        spark_mod.load_file(str(data), "notes", fresh_dsn, fmt="json")
    assert db.conn.execute("SELECT count(*) FROM argus_inbox.notes").fetchone() == (0,)


def test_generated_transfers_feed_the_queries(spark, db, fresh_dsn):
    from argus.bench.datagen import TRANSFER_COLUMNS
    from argus.bench.sparkgen import transfers

    db.create_stream("transfers", TRANSFER_COLUMNS, time_column="tran_date")
    db.register_query("big", "SELECT tran_id FROM transfers WHERE amount > 1000000")
    df = transfers(spark, 20_000)
    result = spark_mod.load(df, "transfers", fresh_dsn, load_id="gen-1")
    assert result.rows == df.count() > 20_000  # the chains came along
    db.run()
    expected = db.conn.execute("SELECT count(*) FROM argus_streams.transfers "
                               "WHERE amount > 1000000").fetchone()[0]
    assert len(db.results("big")) == expected > 0


def test_the_demo_runs_on_spark_generated_data(admin_dsn):
    from argus.cli import main

    out = CliRunner().invoke(main, ["demo", "--spark", "--cycles", "2", "--history", "5000",
                                    "--batch", "1000", "--dsn", admin_dsn],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "by Spark" in out.output and "cycle 2" in out.output
    from argus import roles

    roles.drop_database(admin_dsn, "argus_demo")


def test_tpch_initial_load_and_refresh_batches(db, fresh_dsn, tmp_path):
    tpch = pytest.importorskip("argus.bench.tpch")
    pytest.importorskip("duckdb", reason="the tpch extra is not installed")
    from .oracle import Oracle

    data = tpch.generate(0.01, tmp_path / "tpch", batches=2, share=0.01)
    oracle = Oracle(db)
    for table in tpch.TABLES:
        oracle.create_stream(table, data.columns[table],
                             time_column={"orders": "o_orderdate"}.get(table))
    oracle.register("revenue_by_segment", """
        SELECT c_mktsegment, count(*) AS orders, sum(o_totalprice) AS revenue
          FROM customer JOIN orders ON o_custkey = c_custkey
         GROUP BY c_mktsegment""")
    oracle.register("late_lines", """
        SELECT l_orderkey, count(*) AS n FROM lineitem
         WHERE l_receiptdate > l_commitdate GROUP BY l_orderkey HAVING count(*) > 3""")
    files = [data.initial] + data.refresh
    for i, batch in enumerate(files):
        for table, path in batch.items():
            spark_mod.load_file(str(path), table, fresh_dsn, load_id=f"tpch-{i}-{table}")
        # the oracle mirrors what argus loaded: the streams' histories after the cycle
        oracle.accumulated.clear()
        db.run()
        for table in batch:
            db.conn.execute(f"TRUNCATE oracle_mirror.{table}")  # noqa: S608 - constants
            db.conn.execute(f"INSERT INTO oracle_mirror.{table} "  # noqa: S608
                            f"SELECT * FROM argus_streams.{table}")
        oracle.check()
    (orders,) = db.conn.execute("SELECT count(*) FROM argus_streams.orders").fetchone()
    assert orders == 15_000  # scale 0.01: every order loaded exactly once


def test_argus_gen_writes_parquet(spark, tmp_path, monkeypatch):
    pytest.importorskip("duckdb", reason="the tpch extra is not installed")
    from argus.cli import main

    out = CliRunner().invoke(main, ["gen", "tpch", "--scale", "0.01", "--batches", "3",
                                    "--out", str(tmp_path / "tpch")], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert (tmp_path / "tpch" / "lineitem_refresh_03.parquet").is_file()
    monkeypatch.setenv("ARGUS_JDBC_JAR", str(tmp_path / "absent.jar"))  # files: no driver
    out = CliRunner().invoke(main, ["gen", "transfers", "--rows", "1000", "--first-id",
                                    "5000000", "--out", str(tmp_path / "tr")],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    written = spark.read.parquet(str(tmp_path / "tr"))
    assert f"{written.count():,} transfers written" in out.output and "1,000 and" in out.output
    # (issue 54: ids past 1,000 a day since 2024 were dated years ahead, and quarantined)
    assert written.agg({"tran_date": "max"}).first()[0] <= datetime.date.today()


def test_one_load_id_from_two_processes_loads_once(events, fresh_dsn, tmp_path):
    """The second process waits for the first (a lock on the id), then finds it loaded:
    every row once, and the id recorded with the rows it moved."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import argus.spark as s
        spark = s.session()
        df = spark.createDataFrame([(i, "2024-01-01", 1.0) for i in range(3000)],
                                   "id long, day string, v double").repartition(3)
        print(s.load(df, "events", {fresh_dsn!r}, load_id="twice").rows)
    """))
    jobs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [job.communicate(timeout=300)[0] for job in jobs]
    assert all(job.returncode == 0 for job in jobs)
    assert sorted(int(out.split()[-1]) for out in outputs) == [0, 3000]
    assert len(inbox(events)) == 3000
    assert [(r[0], r[2]) for r in events.loads()] == [("twice", 3000)]


def test_a_file_is_identified_by_its_content(events, fresh_dsn, tmp_path):
    """Touched, copied or renamed: loaded once. Another file of the same size and
    modification time, or a file changed inside a directory: loaded."""
    data = tmp_path / "a.csv"
    data.write_text("id,day,v\n1,2024-01-01,9.5\n2,2024-01-02,1.5\n")
    spark_mod.load_file(str(data), "events", fresh_dsn)
    os.utime(data)  # touched
    copy = tmp_path / "copy.csv"
    shutil.copy2(data, copy)
    for path in (data, copy):
        assert spark_mod.load_file(str(path), "events", fresh_dsn).duplicate
    same_size = tmp_path / "b.csv"
    same_size.write_text("id,day,v\n3,2024-01-01,9.5\n4,2024-01-02,1.5\n")
    stat = data.stat()
    os.utime(same_size, (stat.st_atime, stat.st_mtime))  # cp -p of other data
    assert spark_mod.load_file(str(same_size), "events", fresh_dsn).rows == 2
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "part.csv").write_text("id,day,v\n5,2024-01-01,1\n")
    spark_mod.load_file(str(folder), "events", fresh_dsn, fmt="csv")
    (folder / "part.csv").write_text("id,day,v\n6,2024-01-01,1\n")  # rewritten inside
    assert spark_mod.load_file(str(folder), "events", fresh_dsn, fmt="csv").rows == 1
    assert [r[0] for r in inbox(events)] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("line, what", [("2,2024-01-02,1.5,extra", "an extra field"),
                                        ("2,2024-01-02", "a missing field"),
                                        ('2,"2024-01-02,1.5', "an unbalanced quote")])
def test_a_malformed_csv_row_fails_the_load_naming_file_and_line(events, fresh_dsn, tmp_path,
                                                                 line, what):
    data = tmp_path / "bad.csv"
    data.write_text("id,day,v\n1,2024-01-01,9.5\n" + line + "\n3,2024-01-03,2.5\n")
    with pytest.raises(argus.LoadError, match=rf"file {data}, line 3"):
        spark_mod.load_file(str(data), "events", fresh_dsn)
    assert inbox(events) == [] and events.loads() == [], what


def test_parquet_files_with_other_columns_fail_naming_the_file(spark, events, fresh_dsn,
                                                               tmp_path):
    folder = tmp_path / "parts"
    spark.createDataFrame([(1, "2024-01-01", 1.0)], "id long, day string, v double") \
        .write.parquet(str(folder / "a"))
    spark.createDataFrame([(2, "2024-01-01")], "id long, day string") \
        .write.parquet(str(folder / "b"))  # a column missing
    with pytest.raises(argus.LoadError, match=r"file .*/b/part-.*differ from the other"):
        spark_mod.load_file(str(folder), "events", fresh_dsn, fmt="parquet")
    mixed = tmp_path / "mixed"  # the same columns, one of another type in each file
    spark.createDataFrame([(4, "2024-01-01", 1.0)], "id long, day string, v double") \
        .write.parquet(str(mixed / "a"))
    spark.sql("SELECT 5L AS id, '2024-01-01' AS day, CAST(2.5 AS decimal(10,2)) AS v") \
        .write.parquet(str(mixed / "b"))
    with pytest.raises(argus.LoadError,
                       match=r"file .*/b/part-.*'v' is decimal\(10,2\) here but double in .*/a/"):
        spark_mod.load_file(str(mixed), "events", fresh_dsn, fmt="parquet")
    spark.createDataFrame([(3, True)], "id long, v boolean").write.parquet(str(tmp_path / "c"))
    with pytest.raises(argus.LoadError, match=r"file .*/c/part-.*'v' has type boolean"):
        spark_mod.load_file(str(tmp_path / "c"), "events", fresh_dsn, fmt="parquet")
    assert inbox(events) == []


def test_a_bad_value_names_the_file_and_the_row(events, fresh_dsn, tmp_path):
    data = tmp_path / "values.csv"
    data.write_text("id,day,v\n1,2024-01-01,9.5\n2,2024-01-02,12x\n")
    with pytest.raises(argus.LoadError, match=r'numeric: "12x".*file .*values.csv, line 3: .*12x'):
        spark_mod.load_file(str(data), "events", fresh_dsn)


def test_failed_and_abandoned_staging_is_cleaned_up(spark, events, fresh_dsn):
    bad = spark.createDataFrame([(1, "not a day", 1.0)], "id long, day string, v double")
    with pytest.raises(argus.LoadError):
        spark_mod.load(bad, "events", fresh_dsn, load_id="fails")
    staged = "SELECT count(*) FROM pg_tables WHERE schemaname = 'argus_staging'"
    assert events.conn.execute(staged).fetchone() == (0,)
    # a load killed after staging left its table: swept by a cycle once it is stale
    prepare_staging(events.conn, "events", "killed")
    events.run()
    assert events.conn.execute(staged).fetchone() == (1,)  # not stale yet: a load may live
    events.conn.execute("UPDATE argus_catalog.staging SET created_at = now() - interval '2h'")
    events.run()
    assert events.conn.execute(staged).fetchone() == (0,)
    assert events.conn.execute("SELECT count(*) FROM argus_catalog.staging").fetchone() == (0,)


def test_a_jvm_killed_during_a_load_is_a_clear_error(events, fresh_dsn, tmp_path):
    script = tmp_path / "job.py"
    data = tmp_path / "e.csv"
    data.write_text("id,day,v\n1,2024-01-01,9.5\n")
    script.write_text(textwrap.dedent(f"""
        import argus, argus.spark as s
        spark = s.session()
        spark.sparkContext._gateway.proc.kill()  # the JVM dies
        spark.sparkContext._gateway.proc.wait()
        try:
            s.load_file({str(data)!r}, "events", {fresh_dsn!r})
        except argus.LoadError as exc:
            print("LoadError:", exc)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert "LoadError: Spark stopped during the load" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stdout
    assert inbox(events) == []


def test_a_writer_role_loads_with_spark_and_nothing_else(spark, events, fresh_dsn, login,
                                                         tmp_path):
    """A writer of one stream (not a member of argus's owner role) loads a DataFrame
    through a staging table the owner made for it, exactly once, and a directory file by
    file; its JDBC connection may not write another load's staging table or another
    stream."""
    role, dsn = login("writer")
    events.create_stream("other", {"id": "bigint"})
    events.grant("writer", role, stream="events")
    df = spark.createDataFrame([(1, "2024-01-01", 3.5), (2, "2024-01-02", 7.25)],
                               "id long, day string, v double")
    assert spark_mod.load(df, "events", dsn, load_id="w-1").rows == 2
    assert spark_mod.load(df, "events", dsn, load_id="w-1").duplicate
    with pytest.raises(argus.UnknownStreamError):
        spark_mod.load(df.select("id"), "other", dsn, load_id="w-2")
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT argus.prepare_staging('other', 'w-3')")
    folder = tmp_path / "parts"
    spark.createDataFrame([(3, 8.5)], "id long, v double").coalesce(1).write.parquet(
        str(folder / "a"))
    assert spark_mod.load_file(str(folder), "events", dsn).rows == 1  # (its file recorded)
    assert spark_mod.load_file(str(next(folder.rglob("part-*.parquet"))), "events",
                               dsn).duplicate
    events.run()
    assert sorted(events.results("big")) == [(2, 7.25), (3, 8.5)]
    assert events.conn.execute("SELECT count(*) FROM pg_tables "
                               "WHERE schemaname = 'argus_staging'").fetchone() == (0,)


@pytest.mark.parametrize("bad, message", [
    ("3,toolong,1,2.5", r"value too long for type character varying\(4\)"),
    ("3,ok,1,123456789.5", r"numeric field overflow"),
    ("3,ok,40000,2.5", r'value "40000" is out of range for type smallint'),
])
def test_a_value_the_server_quotes_not_names_the_file_and_the_row(db, fresh_dsn, tmp_path,
                                                                   bad, message):
    """A value too long, a numeric overflow: PostgreSQL quotes no value, so the row is
    found by the stream's columns of the type it names (an integer read as text it
    quotes)."""
    db.create_stream("sized", {"id": "bigint", "code": "varchar(4)", "n": "smallint",
                               "v": "numeric(10,2)"})
    data = tmp_path / "sized.csv"
    data.write_text(f"id,code,n,v\n1,ab,1,2.5\n2,cd,2,3.5\n{bad}\n4,ef,4,4.5\n")
    with pytest.raises(argus.LoadError, match=message + r".*file .*sized.csv, line 4: .*'id': "
                                              r"'?3'?"):
        spark_mod.load_file(str(data), "sized", fresh_dsn)
    assert db.conn.execute("SELECT count(*) FROM argus_inbox.sized").fetchone()[0] == 0


def test_an_integer_out_of_range_from_a_dataframe_names_the_row(spark, db, fresh_dsn):
    """A typed value (a long into a smallint) is refused without its value quoted."""
    db.create_stream("small", {"id": "bigint", "n": "smallint"})
    df = spark.createDataFrame([(1, 5), (2, 40000), (3, 7)], "id long, n long")
    with pytest.raises(argus.LoadError, match=r"smallint out of range.*the row: .*'id': 2"):
        spark_mod.load(df, "small", fresh_dsn)


def test_a_directory_skips_the_files_loaded_before_and_says_so(spark, events, fresh_dsn,
                                                              tmp_path):
    """Each file of a directory is identified by its content: a file loaded alone, or
    with another directory, is not loaded again with this one; Hive-style partition
    columns (day=…) are read as when the whole directory is."""
    root = tmp_path / "parts"
    for day, ids in (("2024-01-01", [1, 2]), ("2024-01-02", [3]), ("2024-01-03", [4, 5])):
        spark.createDataFrame([(i, 1.5) for i in ids], "id long, v double").coalesce(1) \
            .write.parquet(str(root / f"day={day}"))
    first = next((root / "day=2024-01-01").glob("part-*.parquet"))
    spark_mod.load_file(str(first), "events", fresh_dsn)  # one file alone: no day column
    said = []
    done = spark_mod.load_file(str(root), "events", fresh_dsn, progress=said.append)
    assert done.rows == 3 and any(str(first) in m and "skipped" in m for m in said)
    assert inbox(events) == [(1, None, 1.5), (2, None, 1.5),
                             (3, datetime.date(2024, 1, 2), 1.5),
                             (4, datetime.date(2024, 1, 3), 1.5),
                             (5, datetime.date(2024, 1, 3), 1.5)]
    assert spark_mod.load_file(str(root), "events", fresh_dsn).duplicate
    spark.createDataFrame([(6, 2.5)], "id long, v double").coalesce(1) \
        .write.parquet(str(root / "day=2024-01-04"))
    assert spark_mod.load_file(str(root), "events", fresh_dsn).rows == 1  # only the new file
    assert [r[0] for r in inbox(events)] == [1, 2, 3, 4, 5, 6]
