"""VACUUM of the deltas and inboxes a committed cycle leaves behind.

Every cycle empties the deltas it writes, and claims the inboxes, by DELETE (TRUNCATE
would take an exclusive lock and make every kept plan of the statements reading them
plan again). Until VACUUM notes their pages as free, the next cycle's rows go to new
pages, and every scan of a delta reads each page written since its last VACUUM: with
autovacuum off or behind, TPC-H's lineitem delta held 512 pages for ~1,200 rows a cycle,
read 40 times a cycle. So a cycle pays for its delta only, an owner's session vacuums,
after a cycle it commits, the ones that hold more dead rows than DEAD_ROWS and than
four times their live ones. It frees their pages for the next rows without shrinking
the files: shrinking takes an exclusive lock, which waits for the loaders writing to an
inbox. Looking for them (the statistics flushed, then read for every table) costs as
much as the rest of a small cycle's bookkeeping, so it looks after a cycle that claimed
an eighth of DEAD_ROWS or more, and after every eighth (a delta of more than 5,000 rows
the next cycle truncates itself: argus.run_cycle).

An inbox waits for INBOX_DEAD_ROWS dead rows, or for its files (TOAST included: wide
rows' dead values pile up there) to reach settings.INBOX_TAKEN_WHOLE
truncate_inbox_bytes, where the claim takes it whole unless a load holds it (then
its dead rows need only outnumber its live ones four times, not DEAD_ROWS: a thousand
wide rows are megabytes; with a load always holding one, 7.1 -> 3.7 MB): only the
claim reads it, and stepping over its dead pages costs less than its VACUUM, after which
the claim's kept plan (one statement for all streams) is made again. Vacuumed at every
cycle, a tracked TPC-H's lineitem inbox made it so: planning kept statements again went
from 18% of the cycle's time to 10% without it."""

from __future__ import annotations

import logging

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from . import settings
from .names import INBOX_SCHEMA, NETWORK_SCHEMA

DEAD_ROWS = 1_000
INBOX_DEAD_ROWS = 16 * DEAD_ROWS
LOOK_EVERY = 8  # cycles, at most, between two looks

# (pg_stat's counts, flushed by the statement before, read for argus's two schemas
# alone: pg_stat_user_tables computed some twenty counters for every table of the
# database, 1 ms of a 7 ms cycle; a table another session vacuums is skipped)
_GROWN = """
SELECT c.nspname, c.relname
  FROM (SELECT n.nspname, c.relname, c.oid, c.relowner
          FROM pg_catalog.pg_class AS c
          JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
         WHERE c.relkind = 'r' AND (n.nspname = %(inboxes)s
                                    OR n.nspname = %(network)s AND c.relname LIKE %(deltas)s)
        OFFSET 0) AS c  -- (the counters read for these alone)
 CROSS JOIN LATERAL (SELECT pg_catalog.pg_stat_get_dead_tuples(c.oid) AS dead,
                            pg_catalog.pg_stat_get_live_tuples(c.oid) AS live) AS s
 WHERE CASE WHEN s.dead >= 4 * s.live  -- (files measured only then)
                 AND (s.dead >= %(rows)s OR c.nspname = %(inboxes)s)
            THEN c.nspname <> %(inboxes)s OR s.dead >= %(inbox_rows)s
                 OR pg_catalog.pg_total_relation_size(c.oid)
                    >= %(whole)s * (SELECT truncate_inbox_bytes FROM argus_catalog.settings)
       END
   AND pg_catalog.pg_has_role(c.relowner, 'USAGE')
 ORDER BY s.dead DESC
"""

log = logging.getLogger(__name__)


def due(run_id: int, rows_in: int) -> bool:
    """Whether the committed cycle `run_id`, which claimed `rows_in` rows, looks for
    grown tables: between two looks, at most LOOK_EVERY - 1 cycles of fewer than an
    eighth of DEAD_ROWS each."""
    return rows_in * LOOK_EVERY >= DEAD_ROWS or run_id % LOOK_EVERY == 0


def vacuum_grown(conn: psycopg.Connection) -> list[str]:
    """VACUUM the grown deltas and inboxes this session owns, on an autocommit
    connection outside a transaction (else nothing: VACUUM runs in none); their names."""
    if not conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        return []
    try:
        if conn.info.server_version >= 150000:  # (this session's counts of the cycle too)
            conn.execute("SELECT pg_catalog.pg_stat_force_next_flush()")
        grown = conn.execute(_GROWN, {
            "inboxes": INBOX_SCHEMA, "network": NETWORK_SCHEMA, "deltas": "n%\\_delta",
            "rows": DEAD_ROWS, "inbox_rows": INBOX_DEAD_ROWS,
            "whole": settings.INBOX_TAKEN_WHOLE}, prepare=True).fetchall()
        if grown:
            conn.execute(sql.SQL("VACUUM (SKIP_LOCKED, TRUNCATE false) {}").format(
                sql.SQL(", ").join(sql.Identifier(s, t) for s, t in grown)))
    except psycopg.errors.InsufficientPrivilege:  # (a writer's cycle: argus's settings
        return []  # and tables are the owner's, not its to vacuum; found by a helper)
    except psycopg.Error as exc:  # (housekeeping: the cycle is committed whatever it says)
        log.warning("argus: VACUUM of the cycle's deltas failed: %s", exc)
        return []
    return [f"{s}.{t}" for s, t in grown]
