"""Spark → argus: load a DataFrame into a stream over JDBC, exactly once.

Spark writes into a per-load staging table (many tasks, many connections, retries
possible); one transaction then moves the rows into the stream's inbox and records the
load id (`argus.loads`). Every row is tagged with its Spark partition and position, so a
partition written twice by a retried task is moved once. A load id already recorded is
a no-op: re-running a job with the same id loads nothing. Give a stable id (the default
for files is their path, size and modification time) to make re-runs safe.

Needs the `spark` extra (pyspark) and Java; the PostgreSQL JDBC driver is taken from
$ARGUS_JDBC_JAR, else Debian's /usr/share/java/postgresql.jar, else Maven coordinates
in $ARGUS_JDBC_PACKAGES (for machines that reach a Maven repository).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .api import resolve_dsn
from .errors import LoadError, UnknownStreamError
from .loads import LoadResult, already_loaded, commit_staged, prepare_staging, staging_table
from .names import check_name
from .streams import stream_schemas

JDBC_JARS = ("/usr/share/java/postgresql.jar",)
DEFAULT_MASTER = "local[2]"

# PostgreSQL type -> the Spark types that can feed it (strings can feed anything: the
# driver sends them untyped and PostgreSQL parses them, so bad values fail the load).
_ACCEPTS = {
    "int": ("ByteType", "ShortType", "IntegerType", "LongType"),
    "num": ("ByteType", "ShortType", "IntegerType", "LongType", "DecimalType", "FloatType",
            "DoubleType"),
    "date": ("DateType", "TimestampType", "TimestampNTZType"),
    "time": ("DateType", "TimestampType", "TimestampNTZType"),
    "bool": ("BooleanType",),
}


def _family(pg_type: str) -> str | None:
    if pg_type in ("smallint", "integer", "bigint"):
        return "int"
    if pg_type.startswith(("numeric", "real", "double precision")):
        return "num"
    if pg_type == "date":
        return "date"
    if pg_type.startswith("timestamp"):
        return "time"
    if pg_type == "boolean":
        return "bool"
    return None


def jdbc_jar() -> str | None:
    configured = os.environ.get("ARGUS_JDBC_JAR")
    if configured:
        if not Path(configured).is_file():
            raise LoadError(f"ARGUS_JDBC_JAR={configured} is not a file")
        return configured
    return next((jar for jar in JDBC_JARS if Path(jar).is_file()), None)


def session(master: str | None = None, app: str = "argus"):
    """A Spark session with the PostgreSQL JDBC driver (local mode by default)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise LoadError("Spark loading needs pyspark: pip install 'argus[spark]'") from None
    builder = (SparkSession.builder
               .master(master or os.environ.get("ARGUS_SPARK_MASTER", DEFAULT_MASTER))
               .appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "true")
               .config("spark.sql.session.timeZone", "UTC"))
    jar, packages = jdbc_jar(), os.environ.get("ARGUS_JDBC_PACKAGES")
    if jar:
        builder = builder.config("spark.jars", jar)
    elif packages:
        builder = builder.config("spark.jars.packages", packages)
    else:
        raise LoadError("no PostgreSQL JDBC driver for Spark: install Debian's "
                        "libpostgresql-jdbc-java, or set ARGUS_JDBC_JAR to a jar (or "
                        "ARGUS_JDBC_PACKAGES to Maven coordinates)")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jdbc_target(dsn: str) -> tuple[str, dict[str, str]]:
    """The JDBC URL and connection properties of a libpq DSN."""
    parts = conninfo_to_dict(dsn)
    host = parts.get("host") or "localhost"
    if host.startswith("/"):
        raise LoadError(f"Spark's JDBC driver needs TCP, and this DSN names the Unix socket "
                        f"{host}: give a host name or address")
    port, database = parts.get("port") or 5432, parts.get("dbname") or "postgres"
    url = f"jdbc:postgresql://{host}:{port}/{database}"
    props = {"driver": "org.postgresql.Driver", "user": parts.get("user") or "postgres",
             "stringtype": "unspecified", "reWriteBatchedInserts": "true"}
    if parts.get("password"):
        props["password"] = parts["password"]
    return url, props


def check_schema(df, stream: str, columns: tuple[tuple[str, str], ...],
                 not_null: set[str]) -> list[tuple[str, str]]:
    """Match the DataFrame's columns to the stream's (names folded to lower case):
    (DataFrame column, stream column) pairs; a clear error for any mismatch."""
    types = dict(columns)
    pairs, problems = [], []
    for field in df.schema.fields:
        target = field.name.lower()
        if target not in types:
            problems.append(f"column {field.name!r} is not in stream {stream!r} "
                            f"(its columns: {', '.join(types)})")
            continue
        family, spark_type = _family(types[target]), type(field.dataType).__name__
        if spark_type != "StringType" and family and spark_type not in _ACCEPTS[family]:
            problems.append(f"column {field.name!r} has Spark type {field.dataType.simpleString()}"
                            f", which cannot feed {types[target]} (cast it)")
        pairs.append((field.name, target))
    missing = sorted(not_null - {t for _, t in pairs})
    if missing:
        problems.append(f"NOT NULL columns missing from the DataFrame: {', '.join(missing)}")
    if problems:
        raise LoadError(f"cannot load into stream {stream!r}, nothing was loaded: "
                        + "; ".join(problems))
    return pairs


def _spark_error(exc: Exception) -> str:
    """The PostgreSQL message inside a Java exception (value and row included)."""
    text = str(exc)
    found = re.findall(r"ERROR: ([^\n]+?)(?:\n|  Detail: | Call getNextException|$)", text)
    detail = re.search(r"Detail: ([^\n]+)", text)
    if found:
        return found[0].strip() + (f" ({detail.group(1).strip()})" if detail else "")
    return text.strip().splitlines()[0][:500]


def load(df, stream: str, dsn: str | None = None, load_id: str | None = None,
         batch_size: int = 10_000, source: str = "spark",
         progress: Callable[[str], None] | None = None) -> LoadResult:
    """Write a DataFrame into `stream`'s inbox exactly once (see the module's doc)."""
    say = progress or (lambda message: None)
    dsn = resolve_dsn(dsn)
    name = check_name(stream, "stream")
    load_id = load_id or f"spark-{uuid.uuid4()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        schema = stream_schemas(conn).get(name)
        if schema is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        not_null = {r[0] for r in conn.execute(
            """SELECT c.name FROM argus_catalog.stream_columns c
                 JOIN argus_catalog.streams s USING (stream_id)
                WHERE s.name = %s AND c.not_null""", (name,))}
        pairs = check_schema(df, name, schema.columns, not_null)
        if already_loaded(conn, load_id):
            say(f"load {load_id} was loaded before: nothing to do")
            return LoadResult(load_id, name, 0, duplicate=True)
        table = prepare_staging(conn, name, load_id)
        from pyspark.sql import functions as F

        tagged = df.select(*[F.col(f"`{src}`").alias(dst) for src, dst in pairs],
                           F.spark_partition_id().alias("argus_part"),
                           F.monotonically_increasing_id().alias("argus_row"))
        url, props = jdbc_target(dsn)
        started = time.perf_counter()
        say(f"writing {df.rdd.getNumPartitions()} partitions to staging")
        try:
            (tagged.write.mode("append").option("batchsize", batch_size)
             .jdbc(url, table.as_string(conn), properties=props))
        except Exception as exc:  # py4j wraps the driver's error
            raise LoadError(f"load {load_id!r} into stream {name!r} failed, nothing was "
                            f"loaded: {_spark_error(exc)}") from None
        say("moving the staged rows into the inbox")
        result = commit_staged(conn, name, load_id, source)
        seconds = time.perf_counter() - started
        rate = result.rows / max(seconds, 1e-9)
        say(f"{result.rows:,} rows in {seconds:.1f} s ({rate:,.0f} rows/s)")
        return result


def load_file(path: str, stream: str, dsn: str | None = None, fmt: str | None = None,
              header: bool = True, load_id: str | None = None, master: str | None = None,
              batch_size: int = 10_000,
              progress: Callable[[str], None] | None = None) -> LoadResult:
    """Load a CSV, Parquet or JSON file (or directory of them) with Spark."""
    file = Path(path)
    if not file.exists():
        raise LoadError(f"no such file or directory: {path}")
    fmt = (fmt or file.suffix.lstrip(".") or "parquet").lower()
    if fmt not in ("csv", "parquet", "json"):
        raise LoadError(f"unknown format {fmt!r}: use csv, parquet or json")
    stat = file.stat()
    load_id = load_id or f"{file.resolve()}:{stat.st_size}:{int(stat.st_mtime)}"
    spark = session(master)
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", str(header).lower())
    return load(reader.load(str(file)), stream, dsn, load_id, batch_size,
                source=str(file), progress=progress)


__all__ = ["jdbc_jar", "jdbc_target", "load", "load_file", "session", "staging_table"]
