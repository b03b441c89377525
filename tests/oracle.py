"""The oracle every test reuses: a query's incremental answer equals the same SQL run
from scratch by PostgreSQL over a plain copy of the data.

`Oracle` mirrors every row a test loads into plain tables of its own (schema
oracle_mirror), so that it does not trust argus's stream histories either: a row lost
or claimed twice by a cycle shows up as a difference.
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal

from psycopg import sql

from argus import Argus
from argus.names import stream_history, stream_inbox

MIRROR = "oracle_mirror"
# Layouts (settings.layout, virtual_selectivity, virtual_join_growth) that the property
# tests and the fuzzer switch between, for the nodes registered next: every node a
# table; the defaults (selections over a stream as views by PostgreSQL's estimate, joins
# by their size); every node that can be a view (selections that cannot fail, joins
# with a row); views of joins only. Every layout must give the same answers.
LAYOUT_SETTINGS = [
    {"layout": "heuristic"},
    {"layout": "cost", "virtual_selectivity": 0.3, "virtual_join_growth": 4},
    {"layout": "cost", "virtual_selectivity": 0.0, "virtual_join_growth": 1e-9},
    {"layout": "cost", "virtual_selectivity": None, "virtual_join_growth": 1e-9},
]


NAN = "NaN"  # NaN is not equal to itself in Python; PostgreSQL's NaN equals NaN


def _normalize(value: object) -> object:
    if isinstance(value, float):
        return NAN if math.isnan(value) else round(value, 9)
    if isinstance(value, Decimal):
        if value.is_nan():
            return NAN
        return value.normalize() if value.is_finite() else value
    if isinstance(value, list):  # an array (array_agg), a jsonb array
        return ("array", *map(_normalize, value))
    if isinstance(value, dict):  # a jsonb object
        return ("object", *sorted((k, repr(_normalize(v))) for k, v in value.items()))
    return value


def bag(rows: list[tuple]) -> Counter:
    return Counter(tuple(_normalize(v) for v in row) for row in rows)


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9)
    return a == b


def same(actual: Counter, expected: Counter) -> bool:
    """Equal bags, floats compared within a relative 1e-5: PostgreSQL's own float
    aggregates depend on the order it reads rows in, and argus keeps exact sums, so
    that an ill-conditioned variance (of 1e9 + 0.1, 1e9 + 0.2, 1e9 + 0.3) differs in
    the sixth digit — PostgreSQL's being the further from the exact one."""
    if actual == expected:
        return True
    if sum(actual.values()) != sum(expected.values()):
        return False
    left = list((expected - actual).elements())
    for row in (actual - expected).elements():
        match = next((i for i, other in enumerate(left) if len(other) == len(row)
                      and all(_close(a, b) for a, b in zip(row, other))), None)
        if match is None:
            return False
        left.pop(match)
    return not left


class Oracle:
    def __init__(self, db: Argus) -> None:
        self.db = db
        self.conn = db.conn
        self.conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(MIRROR)))
        self.accumulated: dict[str, Counter] = {}  # sum of every change reported, per query
        self.pending: list[tuple[str, list]] = []  # loaded, not yet claimed by a cycle
        self.cycles_checked = 0
        self.held = 0  # the last quarantine id seen: rows a cycle held back are not claimed
        self.followed: list = []  # called when a cycle claimed: mirrors kept by the caller
        self.schemas: tuple[str, ...] = ()  # searched after the mirror for the queries' names

    # -- mirrored operations ---------------------------------------------------

    def create_stream(self, name, columns: dict[str, str] | None = None, **kwargs):
        """(`name` may be an SQLAlchemy Table, as for db.create_stream.)"""
        return self._mirrored(self.db.create_stream(name, columns, **kwargs))

    def create_table(self, name, columns, primary_key):
        return self._mirrored(self.db.create_table(name, columns, primary_key))

    def _mirrored(self, schema):
        self.conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(
            sql.Identifier(MIRROR, schema.name), stream_history(schema.name)))
        return schema

    def insert(self, stream: str, rows: list) -> int:
        """Load rows into argus; the mirror gets them when a cycle claims them."""
        rows = list(rows)
        count = self.db.insert(stream, rows)
        self.pending.append((stream, rows))
        return count

    def update(self, table: str, rows: list) -> int:
        return self._changed(table, "update", list(rows))

    def delete(self, table: str, keys: list) -> int:
        return self._changed(table, "delete", list(keys))

    def churn(self, table: str, rows: list, present: set, gone: list) -> None:
        """A table keyed by its first column: `rows` inserted where their key is new and
        updated where it is `present`, then the keys `gone` deleted; `present` follows."""
        self.insert(table, [r for r in rows if r[0] not in present])
        self.update(table, [r for r in rows if r[0] in present])
        present |= {r[0] for r in rows}
        self.delete(table, gone)
        present -= set(gone)

    def _changed(self, table: str, op: str, rows: list) -> int:
        """A table's update or delete in argus; its mirror's when a cycle claims it."""
        count = getattr(self.db, op)(table, rows)
        self.pending.append((table, (op, rows)))
        return count

    def _change(self, table: str, op: str, rows: list) -> None:
        """A table's update or delete, by key, on its mirror."""
        schema = next(s for s in self.db.streams() if s.name == table)
        key, columns = schema.primary_key, schema.column_names
        mirror = sql.Identifier(MIRROR, table)
        where = sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in key)
        for row in rows:
            values = tuple(row) if isinstance(row, (tuple, list)) else (row,)
            if op == "delete":
                self.conn.execute(sql.SQL("DELETE FROM {} WHERE {}").format(mirror, where),
                                  values)
            else:
                by_name = dict(zip(columns, values))
                self.conn.execute(sql.SQL("UPDATE {} SET ({}) = ROW({}) WHERE {}").format(
                    mirror, sql.SQL(", ").join(map(sql.Identifier, columns)),
                    sql.SQL(", ").join(sql.Placeholder() * len(columns)), where),
                    (*values, *(by_name[k] for k in key)))

    def _mirror_pending(self) -> None:
        """The rows a cycle claimed: all that were loaded, but those of a stream no query
        reads that wait in its inbox (settings.unread_inbox_bytes)."""
        for refresh in self.followed:
            refresh()
        columns = {s.name: s.column_names for s in self.db.streams()}
        waiting = {stream for stream, _ in self.pending if self.conn.execute(
            sql.SQL("SELECT EXISTS (SELECT FROM {})").format(stream_inbox(stream))).fetchone()[0]}
        claimed = [(stream, rows) for stream, rows in self.pending if stream not in waiting]
        self.pending = [(stream, rows) for stream, rows in self.pending if stream in waiting]
        for stream, rows in claimed:
            if isinstance(rows, tuple):  # a table's update or delete
                self._change(stream, *rows)
                continue
            with self.conn.cursor() as cur, cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(
                    sql.Identifier(MIRROR, stream),
                    sql.SQL(", ").join(map(sql.Identifier, columns[stream])))) as copy:
                for row in rows:
                    copy.write_row(tuple(row.get(c) for c in columns[stream])
                                   if isinstance(row, dict) else row)
        # rows the cycle held back (argus_catalog.quarantine) were not claimed
        for (quarantine_id, stream, row) in self.conn.execute(
                "SELECT quarantine_id, stream, row::text FROM argus_catalog.quarantine "
                "WHERE quarantine_id > %s ORDER BY quarantine_id", (self.held,)).fetchall():
            mirror = sql.Identifier(MIRROR, stream)
            deleted = self.conn.execute(sql.SQL(
                "DELETE FROM {m} WHERE ctid = (SELECT ctid FROM {m} AS r WHERE r IS NOT "
                "DISTINCT FROM jsonb_populate_record(NULL::{m}, %s::jsonb) LIMIT 1)").format(
                    m=mirror), (row,)).rowcount
            assert deleted == 1, f"a quarantined row that was never loaded: {row}"
            self.held = quarantine_id

    def release(self, stream: str | None = None) -> int:
        """db.release_quarantine: the rows return to their inboxes, claimed by the next
        cycle (held back again if still too far ahead)."""
        rows = self.conn.execute(
            "SELECT stream, row::text FROM argus_catalog.quarantine "
            "WHERE %(s)s::text IS NULL OR stream = %(s)s", {"s": stream}).fetchall()
        moved = self.db.release_quarantine(stream)
        for name, row in rows:
            values = self.conn.execute(sql.SQL(
                "SELECT (jsonb_populate_record(NULL::{}, %s::jsonb)).*").format(
                    sql.Identifier(MIRROR, name)), (row,)).fetchone()
            self.pending.append((name, [values]))
        return moved

    def register(self, name: str, query: str, **how):
        (last,) = self.conn.execute("SELECT max(run_id) FROM argus_catalog.runs").fetchone()
        info = self.db.register_query(name, query, **how)
        if self.conn.execute("SELECT max(run_id) IS DISTINCT FROM %s FROM argus_catalog.runs",
                             (last,)).fetchone()[0]:
            self._cycled()  # it claimed rows waiting for a reader first
        self.accumulated[info.name] = bag(self.db.results(info.name))
        self.check_query(info.name)
        return info

    def unregister(self, name: str) -> None:
        self.db.unregister_query(name)
        self.accumulated.pop(name, None)

    def retry(self, name: str):
        """Put an isolated query back (db.retry): its answer is rebuilt, and checked."""
        info = self.db.retry(name)
        self.accumulated[info.name] = bag(self.db.results(info.name))
        self.check_query(info.name)
        return info

    def failed(self) -> set[str]:
        return {q.name for q in self.db.queries() if q.status != "ok"}

    def run(self, cycle=None):
        """Run a cycle (db.run, or `cycle()`, e.g. one started from SQL) and check."""
        report = cycle() if cycle else self.db.run()
        self._cycled()
        self.check()
        self.cycles_checked += 1
        return report

    def rig_maintenance(self, rebuild) -> None:
        """Make each signed node's next choice between applying its changes and rebuilding
        from its parents `rebuild(node_id)`, by the learned costs it decides by (the
        choice is timed, hence random in a test: every mix must give the same answers)."""
        nodes = [n for (n,) in self.conn.execute(
            "SELECT node_id FROM argus_catalog.nodes WHERE rebuildable ORDER BY node_id")]
        self.conn.execute(
            "UPDATE argus_catalog.node_stats s SET apply_ms_row = 1, rebuild_ms_row = c.ms "
            "FROM unnest(%s::bigint[], %s::float8[]) AS c(node_id, ms) "
            "WHERE s.node_id = c.node_id",
            (nodes, [0.0001 if rebuild(n) else 100.0 for n in nodes]))

    def run_stale(self):
        """Run a cycle whose answers the test knows to lag their SQL (argus warned of it):
        its changes are counted, the answers not checked."""
        report = self.db.run()
        self._cycled()
        return report

    def _cycled(self) -> None:
        """Fold a cycle's claims and changes into the mirror and the summed changes."""
        self._mirror_pending()  # a cycle claims every row committed before it
        failed = self.failed()
        for name in list(self.accumulated):
            if name in failed:  # isolated: its answer stands where it was
                continue
            signs: dict[tuple, set[int]] = {}
            for *row, sign in self.db.new_results(name):
                self.accumulated[name][tuple(_normalize(v) for v in row)] += sign
                signs.setdefault(tuple(map(repr, row)), set()).add(sign)
            both = [row for row, seen in signs.items() if len(seen) > 1]
            assert not both, (f"query {name}: the changes are not net, these rows are both "
                              f"retracted and inserted: {both[:5]}")
            counts = self.accumulated[name]
            negative = {row: n for row, n in counts.items() if n < 0}
            assert not negative, (f"query {name}: the changes retract rows the answer never "
                                  f"held: {negative}")
            self.accumulated[name] = Counter({row: n for row, n in counts.items() if n})

    # -- checks ----------------------------------------------------------------

    def expected(self, query: str) -> Counter:
        """The query's SQL, as registered, run from scratch over the mirror."""
        with self.conn.transaction():
            self.conn.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(
                sql.SQL(", ").join(map(sql.Identifier, (MIRROR, *self.schemas)))))
            rows = self.conn.execute(query).fetchall()  # test-authored SQL
        return bag(rows)

    def check_query(self, name: str) -> None:
        info = self.db.query(name)
        actual = bag(self.db.results(name))
        expected = self.expected(info.sql)
        assert same(actual, expected), (
            f"query {name}: incremental answer differs from the query run from scratch\n"
            f"  missing: {dict(expected - actual)}\n  extra: {dict(actual - expected)}")
        if name in self.accumulated:
            summed = self.accumulated[name]
            assert same(summed, actual), (
                f"query {name}: the changes reported do not add up to the answer\n"
                f"  in the answer only: {dict(actual - summed)}\n"
                f"  in the changes only: {dict(summed - actual)}")

    def check(self) -> None:
        """Every query that is not isolated after a failure (see db.retry) is exact."""
        for info in self.db.queries():
            if info.status == "ok":
                self.check_query(info.name)
