"""`argus status`: what exists, how much is shared, what the last cycles did."""

from __future__ import annotations

import psycopg
from rich.table import Table

from psycopg import sql

from .catalog import installed_version
from . import roles
from .network import idle_streams
from .network.durability import lost
from .names import MIGRATING, stream_inbox
from .nodes import LOADED

INBOX_COUNT_LIMIT = 1_000_000  # count waiting rows exactly up to here


def status_tables(conn: psycopg.Connection) -> list:
    """What `argus status` prints: the catalog and clock, the streams, the network, the
    recent cycles, then whatever needs attention (migrations, failed queries,
    privileges, waiting requests)."""
    out = [_header(conn), _streams(conn), _network(conn), _runs(conn)]
    running = conn.execute(
        """SELECT substr(application_name, %s), now() - xact_start FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE %s""",
        (len(MIGRATING) + 1, MIGRATING + "%")).fetchall()
    if running:
        out.append("migrating now: " + ", ".join(
            f"{query} (for {elapsed.total_seconds():,.1f} s)" for query, elapsed in running))
    out += [t for t in (_migrations(conn), _failed(conn), _privileges(conn)) if t is not None]
    pending = conn.execute("SELECT count(*) FROM argus_catalog.requests "
                           "WHERE status = 'pending'").fetchone()[0]
    if pending:
        out.append(f"{pending} registrars' requests wait for an argus worker (argus worker, "
                   "or the next argus run)")
    return out


def _header(conn: psycopg.Connection) -> str:
    info = conn.info
    (clock,) = conn.execute("SELECT argus.clock_now()").fetchone()
    return (f"argus catalog v{installed_version(conn)} in database {info.dbname!r} "
            f"on {info.host}:{info.port}; stream clock "
            f"{clock if clock is not None else '(no event time yet)'}")


def _streams(conn: psycopg.Connection) -> Table:
    streams = Table("stream", "history rows", "rows kept", "waiting in inbox", "quarantined",
                    title="streams", title_justify="left")
    (lazy,) = conn.execute("SELECT unread_inbox_bytes IS NOT NULL "
                           "FROM argus_catalog.settings").fetchone()
    idle = idle_streams(conn) if lazy else set()
    for name, history, horizon, held in conn.execute(
            """SELECT s.name, n.hist_rows, n.horizon_column || ' > ' || n.horizon,
                      (SELECT count(*) FROM argus_catalog.quarantine q WHERE q.stream = s.name)
                 FROM argus_catalog.streams s
                 JOIN argus_catalog.node_stats n USING (node_id) ORDER BY s.name""").fetchall():
        (waiting,) = conn.execute(sql.SQL("SELECT count(*) FROM (SELECT FROM {} LIMIT %s) w")
                                  .format(stream_inbox(name)), (INBOX_COUNT_LIMIT + 1,)).fetchone()
        streams.add_row(name, f"{history:,}", horizon or "all",
                        (f"{waiting:,}" if waiting <= INBOX_COUNT_LIMIT
                         else f"over {INBOX_COUNT_LIMIT:,}")
                        + (" (no query reads it: see unread_inbox_bytes)"
                           if name in idle and waiting else ""), f"{held:,}")
    return streams


def _network(conn: psycopg.Connection) -> str:
    (state,) = conn.execute(
        "SELECT coalesce(sum(hist_rows), 0) FROM argus_catalog.node_stats "
        "JOIN argus_catalog.nodes USING (node_id) WHERE kind <> ALL(%s)", (LOADED,)
    ).fetchone()
    queries, nodes, shared, uses = conn.execute(
        """SELECT (SELECT count(*) FROM argus_catalog.queries),
                  (SELECT count(*) FROM argus_catalog.nodes WHERE kind <> ALL(%(loaded)s)),
                  (SELECT count(*) FROM (SELECT node_id FROM argus_catalog.query_nodes
                     JOIN argus_catalog.nodes USING (node_id) WHERE kind <> ALL(%(loaded)s)
                     GROUP BY node_id HAVING count(*) > 1) s),
                  (SELECT count(*) FROM argus_catalog.query_nodes
                     JOIN argus_catalog.nodes USING (node_id) WHERE kind <> ALL(%(loaded)s))""",
        {"loaded": LOADED}).fetchone()
    staged, stale = conn.execute(
        """SELECT count(*), count(*) FILTER (WHERE s.created_at < now() - t.stale_staging_after)
             FROM argus_catalog.staging s, argus_catalog.settings t""").fetchone()
    (durable,) = conn.execute("SELECT durability FROM argus_catalog.settings").fetchone()
    return (f"{queries} queries, {nodes} nodes ({shared} shared by several queries); "
            f"sharing ratio {uses / nodes if nodes else 0:.2f} query uses per node; "
            f"{state:,} rows of node state; {staged} Spark loads staged"
            + (f" ({stale} abandoned: the next load or cycle drops them)" if stale else "")
            + f"; durability {durable}"
            + (": its state was lost in a crash and is rebuilt when argus's owner next "
               "connects or runs a cycle" if lost(conn) else ""))


def _rows(table: Table, rows) -> Table:
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    return table


def _runs(conn: psycopg.Connection) -> Table:
    return _rows(Table("run", "started", "ms", "status", "rows in", "nodes run", "error",
                       title="recent cycles", title_justify="left"), conn.execute(
        """SELECT run_id, started_at::timestamp(0), ms, status, rows_in, nodes_run,
                  concat_ws('; ', error, 'isolated ' || array_to_string(failed_queries, ', '))
             FROM argus.runs ORDER BY run_id DESC LIMIT 5"""))


def _migrations(conn: psycopg.Connection) -> Table | None:
    migrations = conn.execute(
        """SELECT after_run, query, array_to_string(old_trees, '; ') || ' → '
                  || array_to_string(new_trees, '; '), strategy, round(build_ms::numeric),
                  forced, CASE WHEN still_lazy > 0
                               THEN format('%s of %s joins', still_lazy,
                                           cardinality(lazy_nodes)) END
             FROM argus.migrations WHERE migrated
            ORDER BY migration_id DESC LIMIT 5""").fetchall()
    return _rows(Table("after run", "query", "join trees", "strategy", "build ms", "forced",
                       "still completing",
                       title="recent migrations (argus optimize; settings.reoptimize_every)",
                       title_justify="left"), migrations) if migrations else None


def _failed(conn: psycopg.Connection) -> Table | None:
    failed = conn.execute("SELECT name, failed_run, error, culprit FROM argus_catalog.queries "
                          "WHERE status = 'failed' ORDER BY name").fetchall()
    return _rows(Table("query", "since run", "error", "row", title="failed queries (isolated; "
                       "argus retry NAME puts one back)", title_justify="left"),
                 failed) if failed else None


def _privileges(conn: psycopg.Connection) -> Table | None:
    privileges = roles.privileges(conn)
    return _rows(Table("role", "as", "on", title=f"privileges (owner role "
                       f"{roles.owner_role(conn)})", title_justify="left"),
                 privileges) if privileges else None

