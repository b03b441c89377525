"""One cycle: claim the streams' new rows, evaluate the network in sort order, flush.

The whole cycle is one transaction holding the cycle lock: it commits entirely or not
at all, and a failed cycle leaves the inboxes and the network exactly as they were (it
is then logged in argus.runs by a separate transaction).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import psycopg

from . import network
from .compile import COMPILERS, SIGN_ID, Node, claim, clear_delta, flush
from .errors import CycleError, CycleInProgressError
from .names import CYCLE_LOCK
from .templates import render


@dataclass
class CycleReport:
    run_id: int
    rows_in: dict[str, int]  # stream -> rows claimed
    new_rows: dict[str, int]  # query -> rows inserted into its answer
    retracted: dict[str, int]  # query -> rows retracted from its answer
    nodes_run: int
    seconds: float
    node_ms: dict[int, float] = field(default_factory=dict, repr=False)

    @property
    def total_in(self) -> int:
        return sum(self.rows_in.values())


def run(conn: psycopg.Connection, *, wait: bool = True) -> CycleReport:
    started = time.perf_counter()
    try:
        with conn.transaction():
            _lock(conn, wait)
            report = _cycle(conn)
    except CycleInProgressError:
        raise
    except psycopg.Error as exc:
        message = exc.diag.message_primary or str(exc)
        _log_failure(conn, message)
        raise CycleError(f"cycle failed and was rolled back, nothing was claimed: {message}"
                         ) from exc
    report.seconds = time.perf_counter() - started
    return report


def _lock(conn: psycopg.Connection, wait: bool) -> None:
    if wait:
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", CYCLE_LOCK)
    elif not conn.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", CYCLE_LOCK).fetchone()[0]:
        raise CycleInProgressError(
            "another argus cycle (or registration) is running on this database; this cycle "
            "did nothing, and the rows waiting will be claimed by the next one")


def _cycle(conn: psycopg.Connection) -> CycleReport:
    net = network.load(conn)
    (run_id,) = conn.execute(
        "INSERT INTO argus_catalog.runs (started_at, status) VALUES (clock_timestamp(), "
        "'running') RETURNING run_id").fetchone()

    # the previous cycle's changes stop being "the last cycle's changes" now
    stale = [r[0] for r in conn.execute(
        """SELECT node_id FROM argus_catalog.run_nodes
            WHERE rows > 0 AND run_id = (SELECT max(run_id) FROM argus_catalog.runs
                                          WHERE status = 'ok')""")]
    for node_id in stale:
        if node_id in net.nodes:
            conn.execute(clear_delta(net.nodes[node_id]))

    rows: dict[int, int] = {}
    node_ms: dict[int, float] = {}
    rows_in: dict[str, int] = {}
    if net.streams:
        streams = sorted(net.streams.items())
        t0 = time.perf_counter()
        counts = conn.execute(claim([(s, net.nodes[n]) for s, n in streams])).fetchone()
        per_stream_ms = (time.perf_counter() - t0) * 1000 / len(streams)
        for (stream, node_id), count in zip(streams, counts):
            rows_in[stream] = rows[node_id] = count
            node_ms[node_id] = per_stream_ms

    if any(rows.values()):
        for node in net.nodes.values():
            if node.kind == "stream" or not any(rows.get(p) for p in node.parents):
                continue
            statement = COMPILERS[node.kind].delta(node, net.parents(node))
            t0 = time.perf_counter()
            cur = conn.execute(statement)
            node_ms[node.id] = (time.perf_counter() - t0) * 1000
            rows[node.id] = max(cur.rowcount, 0)
        for node_id, count in rows.items():
            if count:
                conn.execute(flush(net.nodes[node_id]))

    # (inserted, retracted) per node whose delta has rows
    changes = {n: _count_changes(conn, net.nodes[n], count) for n, count in rows.items() if count}
    if changes:
        conn.execute(
            """UPDATE argus_catalog.nodes n SET hist_rows = n.hist_rows + d.ins - d.ret
                 FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS d(node_id, ins, ret)
                WHERE n.node_id = d.node_id""",
            (list(changes), [c[0] for c in changes.values()], [c[1] for c in changes.values()]))
    new_rows = {q: changes.get(n, (0, 0))[0] for q, n in net.outputs.items()}
    retracted = {q: changes.get(n, (0, 0))[1] for q, n in net.outputs.items()}

    with conn.cursor() as cur:
        cur.executemany("INSERT INTO argus_catalog.run_streams VALUES (%s, %s, %s)",
                        [(run_id, s, n) for s, n in rows_in.items()])
        cur.executemany("INSERT INTO argus_catalog.run_nodes VALUES (%s, %s, %s, %s)",
                        [(run_id, n, rows.get(n, 0), ms) for n, ms in node_ms.items()])
        cur.executemany("INSERT INTO argus_catalog.run_queries VALUES (%s, %s, %s, %s)",
                        [(run_id, q, new_rows[q], retracted[q]) for q in net.outputs])
    evaluated = len(node_ms) - len(rows_in)
    conn.execute("""UPDATE argus_catalog.runs SET status = 'ok', finished_at = clock_timestamp(),
                           rows_in = %s, nodes_run = %s WHERE run_id = %s""",
                 (sum(rows_in.values()), evaluated, run_id))
    return CycleReport(run_id, rows_in, new_rows, retracted, evaluated, 0.0, node_ms)


def _count_changes(conn: psycopg.Connection, node: Node, rows: int) -> tuple[int, int]:
    """(inserted, retracted) rows in a node's delta."""
    if node.insert_only:
        return rows, 0
    return conn.execute(render("node/count_changes", sign=SIGN_ID, delta=node.delta)).fetchone()


def _log_failure(conn: psycopg.Connection, message: str) -> None:
    try:
        with conn.transaction():
            conn.execute(
                """INSERT INTO argus_catalog.runs (started_at, finished_at, status, error)
                   VALUES (clock_timestamp(), clock_timestamp(), 'failed', %s)""", (message,))
    except psycopg.Error:
        pass  # the server may be gone; the cycle itself was rolled back either way
