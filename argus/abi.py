"""What generated code and the cycle program's frame share: the frame's PL/pgSQL
variables that a node's code reads or sets (declared in
sql_templates/program/cycle_program.sql) and the slots argus.fill_program fills with the
nodes' code. Code generation names them only through this module, so that a variable
renamed in the frame cannot leave a node reading one that no longer exists
(tests/test_layers.py checks both sides).
"""

from __future__ import annotations

from psycopg import sql

# The frame's slots, in the order of their format() placeholders (program.frame):
# argus.fill_program(frame, slots) fills them by name (catalog/functions.sql).
SLOTS = ("declarations", "evaluate", "signed", "flush", "purge", "clear", "outputs",
         "clock_outputs")

# the program's parameters (argus.run_cycle passes them)
RUN = "argus_run"  # the cycle's run_id
SETTINGS = "argus_settings"  # argus_catalog.settings, read once a cycle

# per node, indexed by node id
WRITTEN = "argus_written"  # rows a node wrote to its delta this cycle (nodes.base.var)
HISTORY_ROWS = "argus_hist"  # a node's history rows, read once a cycle (node_stats)

# a node's evaluation
INSERTED = "argus_i"  # rows the running node inserted, retracted
RETRACTED = "argus_r"
COUNTED = ("argus_p", "argus_m")  # a counted statement's (inserted, retracted): INTO
ROW_COUNT = "argus_rc"  # GET DIAGNOSTICS target; an INTO that discards
SCANNED = "argus_scan"  # a statement left its node's delta for the node to count
PLAN_KEPT_ROWS = "argus_plan_kept_rows"  # settings.plan_kept_rows, -1 in a first cycle
ISOLATE = "argus_isolate"  # false: a failing node fails the program

# what ran, in order: node ids and their rows in and out, milliseconds
RAN = ("argus_ids", "argus_ins", "argus_ret", "argus_ms")

# the clock: its value before and after this cycle's claim, and whether it moved
CLOCK_OLD = "argus_clock_old"
CLOCK_NEW = "argus_clock_new"
CLOCK_MOVED = "argus_clock_moved"
PURGE = "argus_purge"  # settings.purge, false where the program runs once to plan

# the claim, per stream (1-based, in the frame's order of streams)
TAKE = "argus_take"  # whether the stream's inbox is claimed this cycle
SIZE = "argus_size"  # the inbox's bytes before the claim
HELD = "argus_held"  # rows held back to the quarantine
LOCKED = "argus_locked"  # the inboxes were taken whole under a lock, read in place
TAKE_WAITING = "argus_take_waiting"  # a registration claims what waits unread
INBOX_LIMIT = "argus_inbox_limit"  # settings.truncate_inbox_bytes
UNREAD_LIMIT = "argus_unread_limit"  # settings.unread_inbox_bytes

FRAME_VARIABLES = (RUN, SETTINGS, WRITTEN, HISTORY_ROWS, INSERTED, RETRACTED,
                   *COUNTED, ROW_COUNT, SCANNED, PLAN_KEPT_ROWS, ISOLATE, *RAN,
                   CLOCK_OLD, CLOCK_NEW, CLOCK_MOVED, PURGE, TAKE, SIZE, HELD, LOCKED,
                   TAKE_WAITING, INBOX_LIMIT, UNREAD_LIMIT)


def v(name: str) -> sql.SQL:
    """A frame variable in generated SQL."""
    return sql.SQL(name)


def at(name: str, index: int) -> sql.SQL:
    """An element of a frame array: a node's (by id) or a stream's (1-based)."""
    return sql.SQL(f"{name}[{int(index)}]")


def claimed(i: int) -> sql.SQL:
    """The variable the claim counts the i-th stream's rows into (0-based i; declared by
    program.frame, one per stream)."""
    return sql.SQL(f"argus_claimed_{int(i) + 1}")
