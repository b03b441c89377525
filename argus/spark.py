"""Spark → argus: load a DataFrame into a stream over JDBC, exactly once.

Spark writes into a per-load staging table (many tasks, many connections, retries
possible); one transaction then moves the rows into the stream's inbox and records the
load id (`argus.loads`). Every row is tagged with its Spark partition and position, so a
partition written twice by a retried task is moved once. A load id already recorded is
a no-op: re-running a job with the same id loads nothing, and the same id loaded by two
processes at once loads once (the second waits for the first). Give a stable id to make
re-runs safe: a file's default id is a digest of its content (`file_id`), so a file
touched, copied or renamed is still loaded once, and a changed one again.

Files are checked before anything is written: a CSV row with too many or too few
fields, or an unbalanced quote, fails the load naming the file and line; every Parquet
file of a directory must match the stream's columns. A value PostgreSQL cannot take
fails the load naming the file and the row.

Needs the `spark` extra (pyspark) and Java; the PostgreSQL JDBC driver is taken from
$ARGUS_JDBC_JAR, else Debian's /usr/share/java/postgresql.jar, else Maven coordinates
in $ARGUS_JDBC_PACKAGES (for machines that reach a Maven repository).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .dsn import resolve_dsn
from .errors import LoadError, UnknownStreamError
from .files import data_files, file_id
from .loads import (LoadResult, already_loaded, claim_id, commit_staged, drop_staging, load_lock,
                    prepare_staging, staging_table, sweep_staging)
from .names import check_name
from .settings import pin_search_path
from .streams import stream_schemas

JDBC_JARS = ("/usr/share/java/postgresql.jar",)
LOG_CONFIG = "spark_log4j2.properties"  # errors only, before the session exists
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


def session(master: str | None = None, app: str = "argus", jdbc: bool = True):
    """A Spark session with the PostgreSQL JDBC driver (local mode by default); without
    it (`jdbc` false) for jobs that only write files."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise LoadError("Spark loading needs pyspark: pip install -e '.[spark]'") from None
    builder = (SparkSession.builder
               .master(master or os.environ.get("ARGUS_SPARK_MASTER", DEFAULT_MASTER))
               .appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.extraJavaOptions",
                       f"-Dlog4j2.configurationFile={Path(__file__).with_name(LOG_CONFIG)}"))
    jar, packages = (jdbc_jar(), os.environ.get("ARGUS_JDBC_PACKAGES")) if jdbc else (None, None)
    if not jdbc:
        pass
    elif jar:
        builder = builder.config("spark.jars", jar)
    elif packages:
        builder = builder.config("spark.jars.packages", packages)
    else:
        raise LoadError("no PostgreSQL JDBC driver for Spark: install Debian's "
                        "libpostgresql-jdbc-java, or set ARGUS_JDBC_JAR to a jar (or "
                        "ARGUS_JDBC_PACKAGES to Maven coordinates)")
    spark = builder.getOrCreate()
    # a failed task's stack trace says less than the load's own error (file and row)
    spark.sparkContext.setLogLevel(os.environ.get("ARGUS_SPARK_LOG", "OFF"))
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
         progress: Callable[[str], None] | None = None,
         files: dict[Path, str] | None = None) -> LoadResult:
    """Write a DataFrame into `stream`'s inbox exactly once (see the module's doc);
    `files`: the ids of the files it reads, recorded with it (load_file)."""
    say = progress or (lambda message: None)
    dsn = resolve_dsn(dsn)
    name = check_name(stream, "stream")
    load_id = load_id or f"spark-{uuid.uuid4()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        pin_search_path(conn)  # (argus's statements: settings.pin_search_path)
        schema = stream_schemas(conn).get(name)
        if schema is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        pairs = check_schema(df, name, schema.columns, schema.not_null)
        swept = sweep_staging(conn)
        if swept:
            say(f"dropped the staging tables of {len(swept)} failed loads")
        with load_lock(conn, name, load_id):  # the same load from another process waits
            if already_loaded(conn, name, load_id):
                say(f"load {load_id} was loaded before: nothing to do")
                return LoadResult(load_id, name, 0, duplicate=True)
            table = prepare_staging(conn, name, load_id)
            try:
                return _write(conn, df, pairs, dict(schema.columns), name, table, load_id,
                              batch_size, source, dsn, say, files or {})
            finally:
                drop_staging(conn, name, load_id)  # moved, or failed: nothing left behind


def _write(conn, df, pairs, types, name, table, load_id, batch_size, source, dsn, say,
           files: dict[Path, str]):
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
        message = re.sub(r'of relation "load_[0-9a-f]+"', f"of stream {name!r}",
                         _spark_error(exc).split(" (Failing row contains")[0])
        raise LoadError(f"load {load_id!r} into stream {name!r} failed, nothing was loaded: "
                        f"{message}{_culprit(df, pairs, exc, types)}") from None
    say("moving the staged rows into the inbox")
    with conn.transaction():
        try:  # (a table's: an insert of a key it has already; a traceback before)
            result = commit_staged(conn, name, load_id, source)
        except psycopg.IntegrityError as exc:
            raise LoadError(f"load {load_id!r} into {name!r} failed, nothing was loaded: "
                            f"{exc.diag.message_primary}") from None
        for file, own_id in files.items():  # (a file another load took meanwhile: none)
            if not result.duplicate and not claim_id(conn, own_id, name, str(file)):
                raise LoadError(f"load {load_id!r} into stream {name!r}: file {file} was "
                                "loaded by another load meanwhile; nothing was loaded: run "
                                "the load again")
    seconds = time.perf_counter() - started
    say(f"{result.rows:,} rows in {seconds:.1f} s ({result.rows / max(seconds, 1e-9):,.0f} "
        "rows/s)")
    return result


def _culprit(df, pairs, exc: Exception, types: dict[str, str]) -> str:
    """Where the value PostgreSQL refused is: the file and the row (its values), found
    in the DataFrame by the value or the column PostgreSQL named, or, when it named
    neither (a value too long, a numeric overflow, an integer out of range), by the
    stream's columns of the type it named (`types`: stream column -> type)."""
    from pyspark.sql import functions as F

    text = str(exc)
    value = re.search(r'ERROR: [^\n]*?"((?:[^"]|"")*)"', text)  # (the first quoted)
    column = re.search(r'ERROR: null value in column "([^"]+)"', text)
    names = {dst: src for src, dst in pairs}
    try:
        if column and column.group(1) in names:
            found = df.where(F.col(f"`{names[column.group(1)]}`").isNull())
        elif value:
            wanted = value.group(1).replace('""', '"')
            found = df.where(F.greatest(*[F.col(f"`{src}`").cast("string") == F.lit(wanted)
                                          for src, _ in pairs] + [F.lit(False)]))
        elif (beyond := _beyond(text, {src: types[dst] for src, dst in pairs})) is not None:
            found = df.where(beyond)
        else:
            return ""
        row = found.select("*", F.input_file_name().alias("argus_file")).first()
    except Exception:  # the DataFrame cannot be read again (the JVM went away, …)
        return ""
    if row is None:
        return ""
    values = {k: v for k, v in row.asDict().items() if k != "argus_file"}
    where = f" in file {row['argus_file']}" if row["argus_file"] else ""
    line = _csv_line(row["argus_file"] or "", list(values.values()))
    return f"; the row{where}{f', line {line}' if line else ''}: {values}"


_INTEGERS = {"smallint": (2**15, ("smallint", "int2")),
             "integer": (2**31, ("integer", "int", "int4")),
             "bigint": (2**63, ("bigint", "int8"))}


def _beyond(text: str, types: dict[str, str]):
    """A Spark condition true of the rows whose value in some column of the type a
    PostgreSQL error names does not fit it (the error quotes no value), or None."""
    from pyspark.sql import functions as F

    def col(name: str):
        return F.col(f"`{name}`")

    if found := re.search(r"value too long for type (character varying|character)\((\d+)\)",
                          text):
        spelled = "varchar|character varying" if found.group(1) != "character" \
            else "char|character|bpchar"
        length = int(found.group(2))
        conditions = [F.length(col(c)) > length for c, t in types.items()
                      if re.fullmatch(rf"({spelled})\s*\(\s*{length}\s*\)", t)]
    elif found := re.search(r"precision (\d+), scale (\d+)", text):
        precision, scale = int(found.group(1)), int(found.group(2))
        limit = 10.0 ** (precision - scale) - 0.5 * 10.0 ** -scale  # (rounds past it)
        conditions = [F.abs(col(c).cast("double")) >= limit for c, t in types.items()
                      if re.fullmatch(rf"(numeric|decimal)\s*\(\s*{precision}\s*,\s*"
                                      rf"{scale}\s*\)", t)]
    elif found := re.search(r"\b(smallint|integer|bigint) out of range", text):
        bound, spelled = _INTEGERS[found.group(1)]
        conditions = [~col(c).cast("decimal(38,0)").between(-bound, bound - 1)
                      for c, t in types.items() if t.lower() in spelled]
    else:
        return None
    return functools.reduce(lambda a, b: a | b, conditions) if conditions else None


def _csv_line(file: str, values: list) -> int | None:
    """The line of a local CSV file holding `values` (read as text, as the load reads
    CSV), counting from 1 with the header; None when not found or not a CSV file."""
    path = Path(file.removeprefix("file://"))
    if path.suffix.lower() != ".csv" or not path.is_file():
        return None
    wanted = ["" if v is None else str(v) for v in values]
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        for fields in reader:
            if fields == wanted:
                return reader.line_num
    return None


def load_file(path: str, stream: str, dsn: str | None = None, fmt: str | None = None,
              header: bool = True, load_id: str | None = None, master: str | None = None,
              batch_size: int = 10_000,
              progress: Callable[[str], None] | None = None) -> LoadResult:
    """Load a CSV, Parquet or JSON file (or directory of them) with Spark. A directory
    without a given `load_id` is loaded file by file's content: files loaded before
    (alone or with another directory) are skipped and said to be, and each file loaded
    is recorded with the load, so that it is never loaded twice."""
    say = progress or (lambda message: None)
    file = Path(path)
    if not file.exists():
        raise LoadError(f"no such file or directory: {path}")
    fmt = (fmt or file.suffix.lstrip(".") or "parquet").lower()
    if fmt not in ("csv", "parquet", "json"):
        raise LoadError(f"unknown format {fmt!r}: use csv, parquet or json")
    files = [file] if file.is_file() else sorted(data_files(file))
    if not files:
        raise LoadError(f"no data files in {path}")
    ids = {f: file_id(f) for f in files} if load_id is None and file.is_dir() else {}
    load_id = load_id or file_id(file)
    with psycopg.connect(resolve_dsn(dsn), autocommit=True) as conn:
        pin_search_path(conn)  # (argus's statements: settings.pin_search_path)
        schema = stream_schemas(conn).get(check_name(stream, "stream"))
        if schema is None:
            raise UnknownStreamError(f"unknown stream {stream!r}")
        if already_loaded(conn, schema.name, load_id):  # said before Spark starts (seconds)
            return LoadResult(load_id, schema.name, 0, duplicate=True)
        skipped = [f for f, i in ids.items() if already_loaded(conn, schema.name, i)]
    for f in skipped:
        say(f"{f} was loaded before: skipped")
        del ids[f]
    if skipped:
        if not ids:
            return LoadResult(load_id, schema.name, 0, duplicate=True)
        files = list(ids)  # the files left, as one load of its own
        load_id = "sha256:" + hashlib.sha256(" ".join(ids.values()).encode()).hexdigest()
    try:
        df = _read(session(master), fmt, file, files, schema, header)
        return load(df, stream, dsn, load_id, batch_size, source=str(file),
                    progress=progress, files=ids)
    except LoadError:
        raise
    except Exception as exc:  # the JVM went away (killed, out of memory), …
        if type(exc).__module__.startswith("py4j") or isinstance(exc, ConnectionError):
            raise LoadError(f"Spark stopped during the load of {path} ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:200]}); nothing was committed: run "
                            "the load again") from None
        raise


def _read(spark, fmt: str, file: Path, files: list[Path], schema, header: bool):
    """The files as one DataFrame, checked as far as Spark's reading can tell."""
    if fmt == "csv":
        return _read_csv(spark, file, files, schema.column_names, header)
    if fmt == "parquet":
        _check_parquet_files(spark, file, files, schema)
    try:
        df = _reader(spark, file, files).format(fmt).load([str(f) for f in files])
    except Exception as exc:  # (JSON objects naming a key twice: a traceback)
        if type(exc).__name__ != "AnalysisException":
            raise
        raise LoadError(f"cannot load {file}, nothing was loaded: "
                        f"{_spark_error(exc)}") from None
    if fmt == "json":
        _check_json(df, file)
    return df


def _check_json(df, file: Path) -> None:
    """JSON Spark could not read as one object per line: said as such (a column
    '_corrupt_record' the stream lacked before; a helper)."""
    if "_corrupt_record" in df.columns:
        raise LoadError(f"cannot load {file}, nothing was loaded: it is not JSON of one "
                        "object per line (a line Spark could not parse: an object over "
                        "several lines, a truncated line, or bytes that are not UTF-8)")


def _reader(spark, path: Path, files: list[Path]):
    """A reader of `files`, of `path` (a directory: its partition columns, key=value
    directories, read as when the directory is)."""
    reader = spark.read
    return reader.option("basePath", str(path)) if path.is_dir() else reader


# an unquoted empty field is NULL and a quoted one an empty string, as for COPY: Spark
# reads both as its nullValue ("" by default) unless that is text no field can hold
# (PostgreSQL's text holds no NUL)
_NULL = "\u0000argus null"


def _read_csv(spark, file: Path, files: list[Path], columns: tuple[str, ...],
              header: bool):
    """Read CSV strictly: every row must have exactly the header's fields (FAILFAST), all
    as strings, which PostgreSQL parses; a malformed row fails naming file and line."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    names = list(columns)
    if header:
        with open(files[0], encoding="utf-8", errors="replace") as handle:
            names = [n.strip().strip('"') for n in handle.readline().rstrip("\r\n").split(",")]
    fields = [StructField(n, StringType()) for n in names]
    # PostgreSQL's CSV (RFC 4180): a quote inside a quoted field is doubled, and a quoted
    # field may span lines; Spark's defaults escape by backslash and end a record at every
    # line end (a doubled quote was loaded raw, a backslash before the closing quote
    # swallowed it, a quoted line break failed the load; a helper)
    reader = (_reader(spark, file, files).schema(StructType(fields))
              .option("header", str(header).lower()).option("enforceSchema", "false")
              .option("escape", '"').option("multiLine", "true")
              .option("nullValue", _NULL))
    strict = reader.option("mode", "FAILFAST").csv([str(f) for f in files])
    try:  # parses every field of every row once (a bare count() would parse none)
        strict.agg(F.sum(F.hash(*[F.col(f"`{n}`") for n in names]))).collect()
    except Exception as exc:
        if type(exc).__module__.startswith("py4j") and "Java" not in type(exc).__name__:
            raise  # the JVM itself: load_file says so
        found = _malformed(files, len(fields), header)
        raise LoadError(f"cannot load {file}, nothing was loaded: "
                        f"{found or _spark_error(exc)}") from None
    return strict


def _malformed(files: list[Path], width: int, header: bool) -> str | None:
    """The first malformed CSV record (only on a failure: a plain scan in Python): its
    file, the line it starts on, and what is wrong."""
    for path in files:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            reader = csv.reader(handle, strict=True)
            start = 1
            try:
                for number, record in enumerate(reader):
                    if not (header and number == 0) and len(record) != width:
                        return (f"file {path}, line {start}: {len(record)} fields where there "
                                f"are {width} columns: {','.join(record)[:200]!r}")
                    start = reader.line_num + 1
            except csv.Error as exc:
                return f"file {path}, line {start}: {exc} (an unbalanced quote?)"
    return None


def _check_parquet_files(spark, path: Path, files: list[Path], schema) -> None:
    """Every Parquet file must have only the stream's columns, with types that can feed
    them, and every NOT NULL one: checked file by file, before anything is written."""
    columns = dict(schema.columns)
    reference: dict[str, str] | None = None  # the first file's columns and types
    first = None
    for file in files:
        fields = {f.name.lower(): f for f in spark.read.parquet(str(file)).schema.fields}
        problems = [f"column {n!r} is not in stream {schema.name!r}"
                    for n in fields if n not in columns]
        for n, field in fields.items():
            family = _family(columns.get(n, ""))
            spark_type = type(field.dataType).__name__
            if family and spark_type != "StringType" and spark_type not in _ACCEPTS[family]:
                problems.append(f"column {n!r} has type {field.dataType.simpleString()}, which "
                                f"cannot feed {columns[n]}")
        types = {n: f.dataType.simpleString() for n, f in fields.items()}
        if reference is not None and set(fields) != set(reference):
            problems.append(f"its columns ({', '.join(sorted(fields))}) differ from the other "
                            f"files' ({', '.join(sorted(reference))})")
        elif reference is not None:  # (Spark would fail writing, naming no file)
            problems += [f"column {n!r} is {t} here but {reference[n]} in {first}"
                         for n, t in types.items() if t != reference[n]]
        if problems:
            raise LoadError(f"cannot load {path}, nothing was loaded: file {file}: "
                            + "; ".join(problems))
        if reference is None:
            reference, first = types, file


__all__ = ["jdbc_jar", "jdbc_target", "load", "load_file", "session", "staging_table"]
