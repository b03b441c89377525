"""Files loaded without Spark: a CSV file, or a directory of them, COPYed into a
stream's inbox by PostgreSQL's own CSV parser, in one transaction, each file once.

Each file's load id is a digest of its bytes, so a directory loaded again after some
of its files were loaded skips those (and says so); PostgreSQL's error for a refused
value names the line and column, which the error here prefixes with the file.
Spark (argus.spark) stays the engine for Parquet, JSON and inputs too large or too far
for one COPY stream.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from .errors import LoadError, UnknownStreamError
from .loads import claim_id
from .names import check_name, stream_inbox
from .streams import stream_schemas
from .tables import refuse_tracked


def file_id(path: Path) -> str:
    """A load id for a file, or a directory of files, from their content (SHA-256 of
    the bytes, and of each file's path relative to the directory): the same data loads
    once whatever its name or modification time, and changed data loads again."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(data_files(path))
    for file in files:
        if file != path:
            digest.update(str(file.relative_to(path)).encode())
        with open(file, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def data_files(directory: Path) -> list[Path]:
    """The data files of a directory as Spark reads them (not _SUCCESS, .crc, hidden)."""
    return [p for p in directory.rglob("*") if p.is_file()
            and not p.name.startswith(("_", ".")) and not p.name.endswith(".crc")]


@dataclass(frozen=True)
class FilesLoaded:
    stream: str
    rows: int
    loaded: list[tuple[Path, str, int]]  # (file, its load id, its rows)
    skipped: list[tuple[Path, str]]  # (file, its load id): loaded before


def load_csv(conn: psycopg.Connection, path: Path, stream: str, header: bool = True,
             load_id: str | None = None,
             progress: Callable[[str], None] | None = None) -> FilesLoaded:
    """COPY a CSV file, or every file of a directory, into `stream`'s inbox: all of
    them or none. Each file once by its content (or, given `load_id`, the whole load
    once by it)."""
    name = check_name(stream, "stream")
    schema = stream_schemas(conn).get(name)
    if schema is None:
        raise UnknownStreamError(f"unknown stream {stream!r}")
    refuse_tracked(schema)
    if schema.primary_key is not None:
        raise LoadError(f"{name!r} is a table (its rows change by key): load it with "
                        "--engine spark, or db.update / db.delete")
    files = [path] if path.is_file() else sorted(data_files(path))
    if not files:
        raise LoadError(f"no data files in {path}")
    loaded, skipped = [], []
    with conn.transaction():
        if load_id is not None and not claim_id(conn, load_id, name, str(path)):
            return FilesLoaded(name, 0, [], [(path, load_id)])
        for file in files:
            columns = _columns(file, schema.column_names, header)
            own_id = load_id or file_id(file)
            if load_id is None and not claim_id(conn, own_id, name, str(file)):
                skipped.append((file, own_id))
                continue
            rows = _copy(conn, file, name, columns, header)
            if load_id is None:
                conn.execute("SELECT argus.count_load(%s, %s, %s)", (own_id, name, rows))
            loaded.append((file, own_id, rows))
            if progress:
                progress(f"{file}: {rows:,} row{'' if rows == 1 else 's'}")
        total = sum(rows for _, _, rows in loaded)
        if load_id is not None:
            conn.execute("SELECT argus.count_load(%s, %s, %s)", (load_id, name, total))
    return FilesLoaded(name, total, loaded, skipped)


def _columns(file: Path, stream_columns: tuple[str, ...], header: bool) -> list[str]:
    """The stream columns the file's fields fill: its header's names, each one of the
    stream's (the others NULL), or without a header all of them in order."""
    if not header:
        return list(stream_columns)
    with open(file, newline="", encoding="utf-8", errors="replace") as handle:
        names = [n.strip() for n in next(csv.reader(handle), [])]
    unknown = [n for n in names if n not in stream_columns]
    if unknown or not names:
        raise LoadError(f"cannot load {file}, nothing was loaded: its header names "
                        f"{', '.join(map(repr, unknown)) or 'no column'}, not a column of "
                        f"the stream ({', '.join(stream_columns)})")
    return names


def _copy(conn: psycopg.Connection, file: Path, stream: str, columns: list[str],
          header: bool) -> int:
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:  # (PostgreSQL's DuplicateColumn came out as a traceback; a helper)
        raise LoadError(f"cannot load {file}, nothing was loaded: its header names column "
                        f"{twice[0]!r} twice")
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT csv, HEADER {})").format(
        stream_inbox(stream), sql.SQL(", ").join(map(sql.Identifier, columns)),
        sql.SQL("true" if header else "false"))
    marker = False  # a `\.` seen (the line scan is done only then)
    try:
        with conn.cursor() as cur:
            with cur.copy(statement) as copy, open(file, "rb") as handle:
                last = b""
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    marker = marker or b"\\." in last + chunk[:1] or b"\\." in chunk
                    last = chunk[-1:]
                    copy.write(chunk)
            rows = cur.rowcount
    except (psycopg.errors.DataError, psycopg.IntegrityError) as exc:  # (CHECK and NOT
        raise _refused(file, exc) from None  # NULL too: a time of infinity; a helper)
    # (raised after the COPY: the caller's transaction takes back what it loaded)
    if marker and (line := _end_of_data_line(file)) is not None:
        raise LoadError(f"cannot load {file}, nothing was loaded: line {line} is \\. alone, "
                        "which PostgreSQL's COPY reads as the end of the data (rows follow "
                        'it); quote it ("\\.") to load it as a value')
    return rows


def _end_of_data_line(file: Path) -> int | None:
    """The line of a `\\.` alone that rows follow: PostgreSQL's COPY stops there and
    says nothing (a helper: the file was recorded as loaded). A last such line is
    harmless; one inside a quoted field is refused too (rare, and quoting is the cure)."""
    found = None
    with open(file, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if found is None:
                found = number if line.rstrip(b"\r\n") == b"\\." else None
            elif line.strip():
                return found
    return None


def _refused(file: Path, exc: psycopg.Error) -> LoadError:
    """PostgreSQL's error, with the file and the line and column its context names."""
    where = next((line.split(", ", 1)[1] for line in (exc.diag.context or "").splitlines()
                  if line.startswith("COPY ") and ", " in line), None)
    return LoadError(f"cannot load {file}, nothing was loaded: "
                     f"{where + ': ' if where else ''}{exc.diag.message_primary}")
