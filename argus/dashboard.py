"""`argus dashboard`: a local page (Flask) to look at the network instead of reading
`argus explain`. The shared network drawn (argus.picture; click a node for what it
computes, its definition and its last cycles), the recent cycles charted (time per
node kind, rows in), each query's answer and last changes, the rows waiting in the
inboxes and those quarantined. Read-only: it runs SELECTs in read-only transactions.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict

import psycopg
from psycopg import sql

from .errors import ArgusError, PermissionDeniedError
from .names import changes_view, check_name, results_view, stream_inbox
from .network.durability import lost
from .network.reads import load_node
from .picture import COLOURS, of_network
from .settings import pin_search_path
from .status import INBOX_COUNT_LIMIT  # (an inbox is counted this far)

RECENT = 30  # cycles charted
SHOWN = 50  # rows of an answer shown
LONGEST = 500  # characters of a value shown


LOOPBACK = ("127.0.0.1", "localhost", "::1")

# Headers on every answer: no framing, no sniffing, nothing loaded from elsewhere.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                               "style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def create_app(dsn: str, hosts: tuple[str, ...] = LOOPBACK):
    """`hosts`: the names the page answers to (its Host header): a page of another site
    that a browser reaches through a name rebound to this address (DNS rebinding) gets
    400, not the answers."""
    try:
        from flask import Flask, abort, jsonify, render_template
    except ImportError:
        raise ArgusError("the dashboard needs Flask: pip install -e '.[dashboard]'") from None

    app = Flask(__name__, template_folder="web")
    app.config["TRUSTED_HOSTS"] = list(hosts)

    @app.after_request
    def headers(response):
        response.headers.update(HEADERS)
        return response

    def read() -> psycopg.Connection:
        conn = psycopg.connect(dsn, autocommit=True, application_name="argus dashboard")
        pin_search_path(conn)  # (its catalog reads: no registrar's function in their place)
        conn.execute("SET default_transaction_read_only = on")
        return conn

    with read() as conn:  # it reads the whole catalog: the owner's view, said at once
        try:
            conn.execute("SELECT FROM argus_catalog.nodes, argus_catalog.run_nodes LIMIT 1")
        except psycopg.errors.InsufficientPrivilege:
            raise PermissionDeniedError(
                f"the dashboard shows the whole network: role {conn.info.user!r} may not "
                "read argus's catalog; run it as argus's owner (or a member of its owner "
                "role)") from None

    @app.get("/")
    def index():
        with read() as conn:
            return render_template("dashboard.html", network=of_network(conn),
                                   cycles=_cycles_chart(conn), queries=_queries(conn),
                                   streams=_streams(conn), colours=COLOURS,
                                   database=conn.info.dbname, lost=lost(conn))

    @app.get("/node/<int:node_id>")
    def node(node_id: int):
        with read() as conn:
            found = _node(conn, node_id)
        return jsonify(found) if found is not None else abort(404)

    @app.get("/query/<name>")
    def query(name: str):
        try:
            name = check_name(name, "query")
        except ArgusError:
            abort(404)
        with read() as conn:
            found = _query(conn, name)
        return jsonify(found) if found is not None else abort(404)

    return app


def _node(conn: psycopg.Connection, node_id: int) -> dict | None:
    """A node for its panel: what it computes, who uses it, its code and last cycles."""
    from .explain import describe

    code = conn.execute("SELECT cycle_block, flush_block FROM argus_catalog.nodes "
                        "WHERE node_id = %s", (node_id,)).fetchone()
    if code is None:
        return None
    found = load_node(conn, node_id)
    timings = conn.execute(
        """SELECT r.run_id, r.ms, r.flush_ms, r.inserted, r.retracted
             FROM argus_catalog.run_nodes r WHERE r.node_id = %s
            ORDER BY r.run_id DESC LIMIT 20""", (node_id,)).fetchall()
    users = [q for (q,) in conn.execute(
        """SELECT q.name FROM argus_catalog.query_nodes qn
             JOIN argus_catalog.queries q USING (query_id)
            WHERE qn.node_id = %s ORDER BY 1""", (node_id,))]
    return dict(id=node_id, kind=found.kind, describe=describe(found), users=users,
                columns=list(found.columns), definition=found.definition, layout=found.layout,
                code=[textwrap.dedent(block) for block in code if block],
                cycles=[{"run": r, "ms": ms, "flush_ms": f, "inserted": i,
                         "retracted": d} for r, ms, f, i, d in timings])


def _query(conn: psycopg.Connection, name: str) -> dict | None:
    """A query for its panel: its SQL, status, answer and last changes."""
    row = conn.execute("SELECT sql, status, error FROM argus_catalog.queries "
                       "WHERE name = %s", (name,)).fetchone()
    if row is None:
        return None
    answer, changes = ([], []) if row[1] != "ok" else (
        _rows(conn, results_view(name)), _rows(conn, changes_view(name)))
    return dict(name=name, sql=row[0], status=row[1], error=row[2], answer=answer,
                changes=changes)


def _rows(conn: psycopg.Connection, view: sql.Composable) -> dict:
    """The first rows of a view, as text: what PostgreSQL prints (`::text` of each value,
    so jsonb, bytea, infinity read as in psql), long values cut. A view that fails to
    read (a division by zero in an output expression) says why."""
    try:
        cur = conn.execute(sql.SQL("SELECT * FROM {} LIMIT %s").format(view), (SHOWN + 1,))
        columns = [c.name for c in cur.description]
        cur = conn.execute(sql.SQL("SELECT {} FROM {} LIMIT %s").format(
            sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns),
            view), (SHOWN + 1,))
        rows = cur.fetchall()
    except psycopg.Error as exc:
        return {"columns": [], "rows": [], "more": False,
                "error": exc.diag.message_primary or str(exc)}
    cut = [[None if v is None else v if len(v) <= LONGEST else v[:LONGEST] + "…" for v in r]
           for r in rows[:SHOWN]]
    return {"columns": columns, "rows": cut, "more": len(rows) > SHOWN}


def _queries(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        """SELECT q.name, q.status, coalesce(s.hist_rows, 0), q.evaluate
             FROM argus_catalog.queries q
             LEFT JOIN argus_catalog.node_stats s ON s.node_id = q.output_node
            ORDER BY q.name""").fetchall()


def _streams(conn: psycopg.Connection) -> list[tuple]:
    out = []
    for name, history, held in conn.execute(
            """SELECT s.name, n.hist_rows,
                      (SELECT count(*) FROM argus_catalog.quarantine q WHERE q.stream = s.name)
                 FROM argus_catalog.streams s JOIN argus_catalog.node_stats n USING (node_id)
                ORDER BY s.name"""):
        (waiting,) = conn.execute(sql.SQL("SELECT count(*) FROM (SELECT FROM {} LIMIT %s) w")
                                  .format(stream_inbox(name)), (INBOX_COUNT_LIMIT,)).fetchone()
        out.append((name, history, waiting, held))
    return out


def _cycles_chart(conn: psycopg.Connection) -> str:
    """The last cycles as stacked bars: each node kind's ms (flush included), and the
    rows each cycle claimed."""
    runs = conn.execute("SELECT run_id, rows_in FROM argus_catalog.runs WHERE status = 'ok' "
                        "ORDER BY run_id DESC LIMIT %s", (RECENT,)).fetchall()[::-1]
    if not runs:
        return '<p class="empty">no cycle has run yet</p>'
    by_run: dict[int, dict[str, float]] = defaultdict(dict)
    for run_id, kind, ms in conn.execute(
            """SELECT r.run_id, n.kind, sum(r.ms + coalesce(r.flush_ms, 0))
                 FROM argus_catalog.run_nodes r JOIN argus_catalog.nodes n USING (node_id)
                WHERE r.run_id = ANY(%s) GROUP BY 1, 2""", ([r for r, _ in runs],)):
        by_run[run_id][kind] = ms
    tallest = max((sum(by_run[r].values()) for r, _ in runs), default=0) or 1.0
    bar, height, parts = 18, 160, []
    for i, (run_id, rows_in) in enumerate(runs):
        y = height
        for kind, ms in sorted(by_run[run_id].items()):
            h = ms / tallest * height
            y -= h
            parts.append(f'<rect class="bar" x="{40 + i * (bar + 6)}" y="{y + 10:.1f}" '
                         f'width="{bar}" height="{h:.1f}" fill="{COLOURS.get(kind, "#bab0ac")}">'
                         f'<title>cycle {run_id}: {kind} {ms:,.1f} ms, {rows_in:,} rows in'
                         '</title></rect>')
        x, y = 40 + i * (bar + 6) + bar / 2, height + 20
        parts.append(f'<text x="{x}" y="{y}" font-size="9" text-anchor="end" '
                     f'transform="rotate(-50 {x} {y})">{_compact(rows_in)}</text>')
    return (f'<svg class="cycles" xmlns="http://www.w3.org/2000/svg" '
            f'width="{60 + len(runs) * (bar + 6)}" height="{height + 60}" '
            'font-family="sans-serif">'
            f'<text x="0" y="12" font-size="10">{tallest:,.1f} ms</text>'
            f'<text x="0" y="{height + 56}" font-size="9">rows in</text>'
            + "".join(parts) + "</svg>")


def _compact(n: int) -> str:
    """A count in a few characters, for a chart's axis: 950, 12k, 1.5M.

    >>> [_compact(n) for n in (950, 1_000, 12_345, 100_000, 1_500_000)]
    ['950', '1k', '12k', '100k', '1.5M']
    """
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            value = n / size
            return f"{value:.1f}".rstrip("0").rstrip(".") + unit if value < 10 \
                else f"{value:.0f}{unit}"
    return str(n)
