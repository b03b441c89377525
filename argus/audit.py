"""The node audit: what each statement of a cycle did for the rows it was given.

A cycle over a sample of new rows runs under PostgreSQL's auto_explain — EXPLAIN
ANALYZE of every statement the cycle program runs, sent to this session as notices —
inside a transaction rolled back at the end, so the network is left as it was. Each
statement is attributed to the node whose table it writes, and flagged where it reads
far more than its delta: a scan (or a sort) of a history, an aggregate's groups or an
aux table that touches more than FLAG_RATIO times the rows the statement read from
deltas and inboxes (or wrote, when it writes more: a deleted supplier retracts all its
line items), and more than FLAG_MIN_ROWS. A node the cycle rebuilt by choice
(its costs said rebuilding is cheaper) is reported as rebuilt, not flagged. So is a
scan that costs little more than probing would: each flagged statement is run again
(rolled back, over the state the cycle left, the best of WEIGHINGS runs each) as planned
and made to probe indexes (no sequential scans, hash or merge joins); unless probing is
at least twice as fast and a millisecond faster (PROBE_GAIN, PROBE_MIN_MS), the scan is
reported with both times, not flagged (a 0.6 ms difference at a 1,000-row sample came
and went with the machine's load); a probing run stops once it has taken twice as long
as planned (PROBE_WAIT_MS at least): it can no longer be worth a flag.

The sample: `rows` rows spread over the streams as their histories are (a stream of
92% of the rows gets 92% of them, at least one): each stream's latest rows (by its time
column, else as stored) loaded again; for a table, as many of its keys deleted (their
retractions flow as an update's would).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from .errors import ArgusError
from .names import INBOX_SCHEMA, NETWORK_SCHEMA, STREAMS_SCHEMA, stream_history, stream_inbox
from .settings import pinned_path

FLAG_RATIO = 10
FLAG_MIN_ROWS = 1000  # (a scan of fewer is as cheap as probing for a few)
PROBE_GAIN = 0.5  # a flagged scan stays flagged where probing takes less than this share
PROBE_MIN_MS = 1.0  # and saves at least this
WEIGHINGS = 3  # runs of each way, the fastest kept
PROBE_WAIT_MS = 1000  # a probing run stops after this, or twice the time as planned
_PLANNED = {"jit": "off"}  # (as cycles run: the costs of disabled plans would invite it)
_PROBING = {**_PLANNED, "enable_seqscan": "off", "enable_hashjoin": "off",
            "enable_mergejoin": "off", "enable_indexscan": "on", "enable_bitmapscan": "on"}
_SCANS = ("Seq Scan", "Bitmap Heap Scan", "Index Scan", "Index Only Scan", "Tid Scan")
_NODE_TABLE = re.compile(r"^n(\d+)(?:_|$)")


@dataclass
class Statement:
    node_id: int | None  # the node whose table it writes (None: the cycle's own)
    kind: str  # the node's kind
    action: str  # "INSERT INTO n5_delta", "MERGE INTO n5", "SELECT"
    ms: float
    delta_rows: int  # rows read from deltas and inboxes
    read: list[tuple[str, str, int]]  # (scan, relation, rows touched) of state
    shape: str  # the plan, one line
    flags: list[str] = field(default_factory=list)
    rebuilt: bool = False
    text: str = field(default="", repr=False)  # the statement, as the cycle ran it
    weighed: list[str] = field(default_factory=list)  # scans weighed and not flagged

    @property
    def us_per_row(self) -> float | None:
        return self.ms * 1000 / self.delta_rows if self.delta_rows else None


def audit(conn: psycopg.Connection, rows: int = 1000,
          query: str | None = None) -> list[Statement]:
    """The statements of one cycle over a sample of `rows` new rows per stream (or
    those of `query`'s nodes only), flagged; nothing of it is kept. On the path cycles
    use (settings.pinned_path): its catalog reads, and its statements run again as
    text, call no registrar's function or operator of the session's path."""
    with pinned_path(conn):
        return _audit(conn, rows, query)


def _audit(conn: psycopg.Connection, rows: int, query: str | None) -> list[Statement]:
    if not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                        ).fetchone()[0]:
        raise ArgusError("the audit loads PostgreSQL's auto_explain, which needs a "
                         "superuser's session")
    notices: list[str] = []

    def collect(diag: psycopg.errors.Diagnostic) -> None:
        if diag.message_primary and "plan:" in diag.message_primary:
            notices.append(diag.message_primary)

    tables = _tables(conn)
    mine = None
    if query is not None:
        mine = {n for (n,) in conn.execute(
            "SELECT node_id FROM argus_catalog.query_nodes JOIN argus_catalog.queries "
            "USING (query_id) WHERE name = %s", (query,))}
    conn.add_notice_handler(collect)
    try:
        with conn.transaction() as tx:
            _sample(conn, rows)
            # the session's first-cycle program: every statement a text run as it is,
            # none a kept plan reading the program's variables, so each can be run again
            conn.execute("SELECT set_config('argus.cycled', 'off', true)")
            conn.execute("LOAD 'auto_explain'")
            for name, value in (("log_min_duration", "0"), ("log_level", "notice"),
                                ("log_nested_statements", "on"), ("log_analyze", "on"),
                                ("log_format", "json"), ("log_timing", "on"),
                                ("log_verbose", "on")):
                conn.execute(sql.SQL("SET LOCAL {} = {}").format(
                    sql.Identifier("auto_explain", name), sql.Literal(value)))
            row = conn.execute("SELECT run_id FROM argus.cycle(true)").fetchone()
            conn.execute("SET LOCAL auto_explain.log_min_duration = -1")
            explained = list(notices)  # (what follows is ours)
            rebuilt = {n for (n,) in conn.execute(
                "SELECT node_id FROM argus_catalog.run_nodes WHERE run_id = %s AND rebuilt",
                (row[0],))} if row else set()
            statements = [s for s in (_statement(n, tables, rebuilt) for n in explained)
                          if s is not None and (mine is None or s.node_id in mine)]
            for statement in statements:
                if statement.flags:
                    _weigh(conn, statement)
            raise psycopg.Rollback(tx)
    finally:
        conn.remove_notice_handler(collect)
    return statements


def _weigh(conn: psycopg.Connection, statement: Statement) -> None:
    """The flagged statement run again as planned and made to probe indexes, each rolled
    back: it stays flagged only where probing is clearly faster."""
    if f'"{INBOX_SCHEMA}".' in statement.text:  # (the cycle emptied the inbox it read)
        return
    planned = probing = math.inf
    for _ in range(WEIGHINGS):
        ms = _explained_ms(conn, statement.text, _PLANNED)
        if ms is None:
            return
        planned = min(planned, ms)
        # a probing run no longer than it could gain (at TPC-H scale 1, a forced nested
        # loop of q21 ran for minutes)
        wait = max(PROBE_WAIT_MS, round(planned / PROBE_GAIN))
        ms = _explained_ms(conn, statement.text, {**_PROBING, "statement_timeout": str(wait)})
        if ms is None:
            return
        probing = min(probing, ms)
        if ms == math.inf:
            break
    both = f"{planned:,.2f} ms as planned, " + (
        f"{probing:,.2f} probing its indexes" if probing < math.inf else
        f"probing its indexes stopped after {wait} ms")
    if probing < PROBE_GAIN * planned and planned - probing >= PROBE_MIN_MS:
        statement.flags = [f"{flag} ({both})" for flag in statement.flags]
    else:
        statement.weighed = [f"{flag}: not worth a flag ({both})" for flag in statement.flags]
        statement.flags = []


def _explained_ms(conn: psycopg.Connection, text: str, settings: dict[str, str]
                  ) -> float | None:
    """The execution time of one run of `text` under `settings`, rolled back; infinite
    if its statement_timeout stopped it; None if it cannot run again (a statement that
    reads the program's variables)."""
    try:
        with conn.transaction() as savepoint:
            for name, value in settings.items():
                conn.execute(sql.SQL("SET LOCAL {} = {}").format(
                    sql.Identifier(name), sql.Literal(value)))
            (explained,) = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) {}").format(
                sql.SQL(text))).fetchone()
            raise psycopg.Rollback(savepoint)
    except psycopg.errors.QueryCanceled:
        return math.inf
    except psycopg.Error:
        return None
    return float(explained[0]["Execution Time"])


def _tables(conn: psycopg.Connection) -> dict[tuple[str, str], tuple[int, str]]:
    """(schema, table) -> (node id, kind), for every table of a node: its history (a
    stream's too), its delta, its aux tables, a stream's inbox."""
    found = {}
    for node_id, kind, schema, name, stream in conn.execute(
            """SELECT n.node_id, n.kind, n.hist_schema, n.hist_name, s.name
                 FROM argus_catalog.nodes n
                 LEFT JOIN argus_catalog.streams s USING (node_id)"""):
        found[(schema, name)] = (node_id, kind)
        if stream is not None:
            found[(INBOX_SCHEMA, stream)] = (node_id, kind)
    for (name,) in conn.execute("SELECT relname FROM pg_class c JOIN pg_namespace n ON "
                                "n.oid = c.relnamespace WHERE n.nspname = %s",
                                (NETWORK_SCHEMA,)):
        match = _NODE_TABLE.match(name)
        if match and (NETWORK_SCHEMA, name) not in found:
            node_id = int(match.group(1))
            kind = next((k for (s, _), (n, k) in found.items() if n == node_id), "?")
            found[(NETWORK_SCHEMA, name)] = (node_id, kind)
    return found


def _sample(conn: psycopg.Connection, rows: int) -> None:
    """New rows for the cycle: each stream's latest rows again; a table's rows deleted."""
    streams = conn.execute(
        "SELECT name, time_column, primary_key FROM argus_catalog.streams ORDER BY name"
    ).fetchall()
    sizes = {name: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
        stream_history(name))).fetchone()[0] for name, _, _ in streams}
    total = sum(sizes.values()) or 1
    for name, time_column, key in streams:
        share = sql.Literal(max(1, round(rows * sizes[name] / total)))
        history, inbox = stream_history(name), stream_inbox(name)
        columns = sql.SQL(", ").join(map(sql.Identifier, [c for (c,) in conn.execute(
            "SELECT c.name FROM argus_catalog.stream_columns c JOIN argus_catalog.streams s "
            "USING (stream_id) WHERE s.name = %s ORDER BY c.position", (name,))]))
        order = sql.SQL(" ORDER BY {} DESC").format(sql.Identifier(time_column)) \
            if time_column else sql.SQL("")
        if key is None:
            conn.execute(sql.SQL("INSERT INTO {} ({c}) SELECT {c} FROM {}{} LIMIT {}").format(
                inbox, history, order, share, c=columns))
        else:
            keys = sql.SQL(", ").join(map(sql.Identifier, key))
            conn.execute(sql.SQL(
                "INSERT INTO {} ({k}, argus_op) SELECT {k}, 'd' FROM {} LIMIT {}").format(
                    inbox, history, share, k=keys))


def _statement(notice: str, tables: dict, rebuilt: set[int]) -> Statement | None:
    try:
        explained = json.loads(notice.split("plan:", 1)[1])
    except (IndexError, ValueError):
        return None
    plan = explained["Plan"]
    node_id, kind, action = None, "cycle", "SELECT"
    top = next((n for n in _walk(plan) if n.get("Node Type") == "ModifyTable"), None)
    if top is not None:  # (the statement's, or a CTE's: a count of what it wrote)
        target = (top.get("Schema"), top.get("Relation Name"))
        node_id, kind = tables.get(target, (None, "cycle"))
        action = f"{top.get('Operation', '').upper()} INTO {target[1]}"
    delta_rows, state = 0, []
    for scan in _walk(plan):
        if scan.get("Node Type") not in _SCANS:
            continue
        relation = (scan.get("Schema"), scan.get("Relation Name"))
        touched = int((scan.get("Actual Rows", 0) + scan.get("Rows Removed by Filter", 0)
                       + scan.get("Rows Removed by Index Recheck", 0))
                      * scan.get("Actual Loops", 1))
        if _is_delta(relation):
            delta_rows += touched
        elif relation in tables or relation[0] == STREAMS_SCHEMA:
            state.append((scan["Node Type"], relation[1], touched))
    for sort in _walk(plan):
        if sort.get("Node Type") == "Sort":
            state.append(("Sort", _label(sort), int(sort.get("Actual Rows", 0)
                                                    * sort.get("Actual Loops", 1))))
    statement = Statement(node_id, kind, action, float(plan.get("Actual Total Time", 0.0)),
                          delta_rows, state, _shape(plan), rebuilt=node_id in rebuilt,
                          text=explained.get("Query Text", ""))
    # what the statement wrote: reading as many rows as it writes is its output's cost
    written = max((int(c.get("Actual Rows", 0)) for n in _walk(plan)
                   if n.get("Node Type") == "ModifyTable" for c in n.get("Plans", [])[:1]),
                  default=0)
    if not statement.rebuilt and delta_rows:
        for scan, relation, touched in state:
            if scan != "Index Scan" and scan != "Index Only Scan" \
                    and touched > max(FLAG_MIN_ROWS, FLAG_RATIO * max(delta_rows, written)):
                statement.flags.append(f"{scan} of {relation}: {touched:,} rows for a "
                                       f"delta of {delta_rows:,}")
    return statement


def _is_delta(relation: tuple[str, str]) -> bool:
    schema, name = relation
    return schema == INBOX_SCHEMA or (schema == NETWORK_SCHEMA and name.endswith("_delta"))


def _walk(plan: dict):
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.get("Plans", []))


def _label(node: dict) -> str:
    below = next((n for n in _walk(node) if n.get("Relation Name")), None)
    return below["Relation Name"] if below else "?"


def _shape(plan: dict) -> str:
    """The plan in one line: each node's type, its relation, its actual rows."""
    def text(node: dict) -> str:
        name = node.get("Node Type", "?")
        if node.get("Relation Name"):
            name += f" {node['Relation Name']}"
        name += f" [{int(node.get('Actual Rows', 0) * node.get('Actual Loops', 1)):,}]"
        children = [text(c) for c in node.get("Plans", [])]
        return f"{name}({', '.join(children)})" if children else name

    return text(plan)


def report(statements: list[Statement]) -> str:
    """The audit as text: one line per statement, the flagged first."""
    lines = []
    for s in sorted(statements, key=lambda s: (not s.flags, -s.ms)):
        per_row = f"{s.us_per_row:,.1f} µs/row" if s.us_per_row is not None else "—"
        where = f"node {s.node_id} ({s.kind})" if s.node_id is not None else "cycle"
        state = "rebuilt by choice; " if s.rebuilt else ""
        lines.append(f"{'FLAG ' if s.flags else '     '}{where}: {s.action}: {s.ms:,.2f} ms, "
                     f"{s.delta_rows:,} delta rows, {per_row}; {state}{s.shape}")
        lines.extend(f"       ! {flag}" for flag in s.flags)
        lines.extend(f"         {scan}" for scan in s.weighed)
    return "\n".join(lines)


def flagged(conn: psycopg.Connection, sizes: tuple[int, ...] = (10, 1000)
            ) -> dict[int, list[Statement]]:
    """Per sample size, the statements the audit flags (as the benchmarks report them)."""
    return {size: [s for s in audit(conn, size) if s.flags] for size in sizes}
