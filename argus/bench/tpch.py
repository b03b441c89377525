"""TPC-H data for the benchmarks, from DuckDB's TPC-H extension (installed from PyPI,
no download at run time), split into an initial load and refresh batches.

The newest orders (by order key) and their line items are held back and cut into
`batches` refresh batches of `share` of the orders each, as TPC-H's refresh function
RF1 inserts them. Everything is written as Parquet, one directory per table, for
`argus load` (Spark) or any other loader.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ArgusError

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
_TYPES = {"INTEGER": "integer", "BIGINT": "bigint", "VARCHAR": "text", "DATE": "date",
          "DOUBLE": "double precision"}


@dataclass
class Dataset:
    root: Path
    scale: float
    initial: dict[str, Path] = field(default_factory=dict)  # table -> Parquet file
    refresh: list[dict[str, Path]] = field(default_factory=list)  # orders, lineitem
    columns: dict[str, dict[str, str]] = field(default_factory=dict)  # PostgreSQL types


def _duckdb():
    try:
        import duckdb
        import duckdb_extension_tpch
    except ImportError:
        raise ArgusError("TPC-H generation needs duckdb and duckdb-extension-tpch: "
                         "pip install -e '.[tpch]'") from None
    extension = glob.glob(os.path.join(os.path.dirname(duckdb_extension_tpch.__file__),
                                       "**", "*.duckdb_extension"), recursive=True)
    if not extension:
        raise ArgusError("the duckdb-extension-tpch package carries no extension file")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"INSTALL {_quoted(extension[0])}")  # the installed package's file
    con.execute("LOAD tpch")
    return con


def _quoted(path: object) -> str:
    """A DuckDB string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def _pg_type(duck: str) -> str:
    if duck.startswith("DECIMAL"):
        return duck.replace("DECIMAL", "numeric")
    return _TYPES.get(duck, "text")


def generate(scale: float, out: Path, batches: int = 10, share: float = 0.001) -> Dataset:
    """Generate TPC-H at `scale` into `out`: initial tables plus refresh batches."""
    if not 0 < scale <= 10:
        raise ArgusError(f"scale {scale}: use a TPC-H scale factor between 0 and 10")
    con = _duckdb()
    con.execute("CALL dbgen(sf = ?)", [scale])
    out.mkdir(parents=True, exist_ok=True)
    data = Dataset(out, scale)
    (orders,) = con.execute("SELECT count(*) FROM orders").fetchone()
    per_batch = max(1, int(orders * share))
    (cut,) = con.execute("SELECT o_orderkey FROM orders ORDER BY o_orderkey DESC "
                         "LIMIT 1 OFFSET ?", [per_batch * batches - 1]).fetchone()
    for table in TABLES:
        data.columns[table] = {name: _pg_type(kind) for name, kind, *_ in
                               con.execute(f"DESCRIBE {table}").fetchall()}  # our constants
        where = {"orders": f"o_orderkey < {int(cut)}",
                 "lineitem": f"l_orderkey < {int(cut)}"}.get(table, "true")
        path = out / f"{table}.parquet"
        con.execute(f"COPY (SELECT * FROM {table} WHERE {where}) TO {_quoted(path)} "
                    "(FORMAT parquet)")
        data.initial[table] = path
    keys = [k for (k,) in con.execute("SELECT o_orderkey FROM orders WHERE o_orderkey >= ? "
                                      "ORDER BY o_orderkey", [cut]).fetchall()]
    for i in range(batches):
        chunk = keys[i * per_batch:(i + 1) * per_batch]
        low, high = chunk[0], chunk[-1]
        batch = {}
        for table, key in (("orders", "o_orderkey"), ("lineitem", "l_orderkey")):
            path = out / f"{table}_refresh_{i + 1:02d}.parquet"
            con.execute(f"COPY (SELECT * FROM {table} WHERE {key} BETWEEN {int(low)} AND "
                        f"{int(high)}) TO {_quoted(path)} (FORMAT parquet)")
            batch[table] = path
        data.refresh.append(batch)
    return data

