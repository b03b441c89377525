"""CSV files loaded without Spark (argus.files, `argus load --engine local`, the
default for CSV): PostgreSQL's COPY into the inbox, all of it or nothing, each file
once by its content, a refused value named by file, line and column."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from argus.cli import main

from .conftest import TRANSFERS


def load(dsn, *args) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["load", "--stream", "transfers", *map(str, args),
                                       "--dsn", dsn])
    return result.exit_code, result.output


def inbox(db) -> list[tuple]:
    return db.conn.execute("SELECT tran_id, sender, amount, receiver FROM argus_inbox.transfers "
                           "ORDER BY tran_id").fetchall()


@pytest.fixture
def files(transfers, tmp_path):
    transfers.register("per_sender", "SELECT sender, count(*) AS n, sum(amount) AS s "
                                     "FROM transfers GROUP BY sender")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text('sender,tran_id,amount\n"x, the first",1,10.50\ny,2,20\n')
    (data / "b.csv").write_text("tran_id,amount,sender\n3,1,x\n")
    return transfers, data


def test_a_directory_after_one_of_its_files_loads_only_the_others(files, fresh_dsn):
    oracle, data = files
    code, out = load(fresh_dsn, data / "a.csv")
    assert code == 0 and "2 rows loaded" in out
    # the header's order, not the stream's; a column it lacks is NULL
    assert inbox(oracle.db) == [(1, "x, the first", 10.5, None), (2, "y", 20, None)]
    code, out = load(fresh_dsn, data)
    assert code == 0 and "a.csv was loaded before: skipped" in out and "1 rows loaded" in out
    code, out = load(fresh_dsn, data)
    assert code == 0 and out.count("loaded before") == 2 and "rows loaded" not in out
    db = oracle.db
    db.run()
    assert sorted(db.results("per_sender")) == sorted(db.conn.execute(
        "SELECT sender, count(*), sum(amount) FROM argus_streams.transfers GROUP BY sender"))
    assert len(db.results("per_sender")) == 3


def test_a_refused_value_names_file_line_and_column_and_loads_nothing(files, fresh_dsn, tmp_path):
    oracle, data = files
    bad = tmp_path / "bad.csv"
    bad.write_text("tran_id,sender,amount\n1,a,10\n2,b,abc\n")
    code, out = load(fresh_dsn, bad)
    assert code == 1 and f"cannot load {bad}" in out and "line 3, column amount" in out
    bad.write_text("tran_id,sender,amount\n1,a,10,5\n")
    code, out = load(fresh_dsn, bad)
    assert code == 1 and "line 2" in out and "extra data" in out
    bad.write_text("tran_id,who\n1,a\n")
    code, out = load(fresh_dsn, bad)
    assert code == 1 and "'who', not a column of the stream" in out
    (data / "c.csv").write_text("tran_id,sender,amount\n9,z,1e99\n")  # overflows numeric(14,2)
    code, out = load(fresh_dsn, data)
    assert code == 1 and "c.csv" in out and "line 2, column amount" in out
    assert inbox(oracle.db) == []  # the directory's good files neither
    bad.write_text("tran_id,sender,sender\n1,a,b\n")  # (a traceback before; a helper)
    code, out = load(fresh_dsn, bad)
    assert code == 1 and "names column 'sender' twice" in out
    bad.write_text("tran_id,tran_date,sender\n1,infinity,a\n")  # (a CHECK's traceback)
    code, out = load(fresh_dsn, bad)
    assert code == 1 and f"cannot load {bad}" in out and "Traceback" not in out, out
    bad.write_text("tran_id,sender\n1,a\n\\.\n2,b\n")  # COPY's end of data, rows after it
    code, out = load(fresh_dsn, bad)  # (they were left out, the file recorded as loaded)
    assert code == 1 and "line 3 is \\. alone" in out, out
    assert inbox(oracle.db) == []
    bad.write_text('tran_id,sender\n1,"\\."\n2,b\n\\.\n\n')  # quoted; a last \. is harmless
    code, out = load(fresh_dsn, bad)
    assert code == 0, out
    assert sorted(r[:2] for r in inbox(oracle.db)) == [(1, "\\."), (2, "b")], inbox(oracle.db)
    code, out = load(fresh_dsn, "--engine", "local", "--format", "parquet", data / "a.csv")
    assert code == 1 and "CSV only" in out


def test_an_explicit_load_id_loads_once(files, fresh_dsn):
    oracle, data = files
    assert load(fresh_dsn, "--load-id", "batch-7", data)[0] == 0
    code, out = load(fresh_dsn, "--load-id", "batch-7", data / "b.csv")
    assert code == 0 and "was loaded before" in out
    assert [r[0] for r in inbox(oracle.db)] == [1, 2, 3]


def test_a_table_is_not_loaded_by_copy(db, fresh_dsn, tmp_path):
    db.create_table("transfers", TRANSFERS, ["tran_id"])
    data = tmp_path / "t.csv"
    data.write_text("tran_id,sender\n1,a\n")
    code, out = load(fresh_dsn, data)
    assert code == 1 and "is a table" in out and "--engine spark" in out
