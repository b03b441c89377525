"""The cycle program: each node's evaluation, flush, probe and rebuild code, and the
PL/pgSQL frame they are assembled into (argus.assemble_program, in the database).
Pure: SQL is built from sql_templates/, nothing runs here."""

from __future__ import annotations

from collections.abc import Callable

from psycopg import sql

from . import abi, settings
from .names import stream_inbox
from .templates import render
from .nodes.base import (Node, SIGN_ID, Step, T1, T2, any_rows, delta_view, identical_when_equal,
                         var, virtual)
from .frontend.lateral import expands
from .nodes import COMPILERS, KINDS, lazy
from .nodes.stream import claim, hold_locked, in_inbox, is_table, take_var

SLOW_NODE_MS = 1000  # a node that takes longer says so as the cycle runs (a NOTICE)


class Statements:
    """The statement texts of a node's code in the lean program (argus_net.cycle_program,
    a session's first cycle): read from argus_catalog.nodes.lean_sql into argus_sql when
    the program starts, not compiled into it. PostgreSQL's compile scans every literal of
    a program at its first call in a session: a third of TPC-H's, for a cycle from cron
    that runs each statement once anyway. Equal texts share an entry."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.texts: dict[str, int] = {}  # (in order: its position in argus_sql)

    def execute(self, text: str) -> sql.Composed:
        position = self.texts.setdefault(text, len(self.texts))
        return sql.SQL("EXECUTE argus_sql->{}->>{}").format(sql.Literal(str(self.node_id)),
                                                            sql.Literal(position))


def _execute(text: str, lean: Statements | None) -> sql.Composed:
    return lean.execute(text) if lean is not None else sql.SQL("EXECUTE {}").format(
        sql.Literal(text))


def _step_code(step: Step, conn, rows: sql.Composable | None, counted: bool = False,
               lean: Statements | None = None, delta: sql.Composable | None = None
               ) -> sql.Composable:
    """`rows`: the rows of the deltas the statement reads (None: always planned for
    them, program/planned_or_kept); `delta`: the node's delta table, which a counted
    statement that only inserts into it may leave to its node to count
    (program/scanned)."""
    statement = step.statement
    into = sql.SQL(" INTO " + ", ".join(abi.COUNTED)) if counted else sql.SQL("")
    if counted:
        statement = render("program/counted", statement=statement, sign=SIGN_ID,
                           ctes=sql.SQL("") if step.ctes is None else step.ctes + sql.SQL(", "))
    elif step.ctes is not None:
        statement = sql.SQL("WITH {} {}").format(step.ctes, statement)
    if not step.dynamic:
        return sql.Composed([statement, into])
    text = statement.as_string(conn)
    executed = sql.SQL("{}{}").format(_execute(text, lean), into)
    if rows is None:
        return executed
    if not counted and text.startswith("SELECT "):  # a check whose rows go nowhere
        statement = sql.SQL("PERFORM {}").format(sql.SQL(text.removeprefix("SELECT ")))
    larger = sql.Composed([statement, into])
    if counted and delta is not None and step.statement.as_string(conn).startswith(
            f"INSERT INTO {delta.as_string(conn)} "):  # planned for large deltas
        plain = _plain(step, conn)
        executed = render("program/scanned", executed=_execute(plain, lean))
        larger = render("program/scanned", executed=sql.SQL(plain))
    return render("program/planned_or_kept", rows=rows, statement=statement, into=into,
                  tier=sql.Literal(KEPT_TIER), larger=larger, executed=executed)


KEPT_TIER = 10  # deltas up to this many times plan_kept_rows have a second plan kept


SCANNED = f"{abi.SCANNED} := true"  # (program/scanned)


def _plain(step: Step, conn) -> str:
    return (step.statement if step.ctes is None else sql.SQL("WITH {} {}").format(
        step.ctes, step.statement)).as_string(conn)


def _counting(node: Node, step: Step) -> tuple[str, bool, sql.Composable]:
    """How a step's rows are counted: (its template, whether its statement counts them
    by sign, the variable ROW_COUNT adds to). A signed node's statement counts its rows
    by sign as it writes them (a CTE that returns each: ~0.4 us a row), unless all have
    one sign (Step.sign): then, as an insert-only node's, by ROW_COUNT."""
    if node.insert_only:
        return "program/step", False, var(node.id)
    if step.sign is None:
        return "program/step_signed", True, var(node.id)
    return "program/step", False, abi.v(abi.INSERTED if step.sign > 0 else abi.RETRACTED)


def _rows(node: Node, parents: list[Node]) -> sql.Composed | None:
    """The rows of the deltas a node's statements read (its parents' and its own), which
    choose a plan kept for the session or one made for this cycle
    (program/planned_or_kept). None: always made for this cycle, after a locked claim
    (taken whole because the inbox grew large; a kept plan would add code that hardly
    ever runs to every session's compile)."""
    if any(p.claimed_in_inbox for p in parents):
        return None
    return sql.SQL(" + ").join(var(n.id) for n in _unique([node, *parents]))


def per_claim(parents: list[Node], code: Callable[[list[Node]], sql.Composed], conn
              ) -> sql.Composed:
    """Code that reads a stream's claimed rows, compiled for both places they can be:
    the inbox after a locked claim, the stream's delta table after any other (so that
    PostgreSQL plans each over one plain table)."""
    copied = code(parents)
    if any(p.loaded for p in parents):
        locked = code(list(map(in_inbox, parents)))
        if locked.as_string(conn) != copied.as_string(conn):
            return render("program/claimed_where", locked=locked, copied=copied)
    return copied


def node_block(node: Node, parents: list[Node], conn, lean: Statements | None = None
               ) -> sql.Composed | None:
    """The node's evaluation in the program that keeps plans for small deltas
    (program/planned_or_kept), which a session's later cycles run; with `lean`, in the
    program of a session's first cycle, which keeps none (Statements)."""
    steps = COMPILERS[node.kind].evaluate(node, parents)
    if delta_view(node):
        code = COMPILERS[node.kind].count_view(node, parents)
    elif not steps:
        return None
    else:
        def step_code(step: Step, parents: list[Node]) -> sql.Composed:
            template, counted, counter = _counting(node, step)
            return render(template, condition=step.condition or sql.SQL("TRUE"),
                          statement=_step_code(step, conn,
                                               None if lean else _rows(node, parents),
                                               counted=counted, lean=lean, delta=node.delta),
                          var=counter)

        code = per_claim(parents, lambda parents: sql.SQL("\n").join([
            *(render("program/flush_step", condition=step.condition, statement=step.statement)
              for step in lazy.completions(node, parents)),
            *(step_code(step, parents) for step in COMPILERS[node.kind].evaluate(node, parents))
        ]), conn)
    counted_as_written = node.insert_only and not delta_view(node)  # a view counts its rows
    counts = render("program/count_insert_only" if counted_as_written
                    else "program/count_scanned" if SCANNED in code.as_string(conn)
                    else "program/count_signed", var=var(node.id), delta=node.delta, sign=SIGN_ID)
    condition = any_rows(*_unique(parents))
    if node.kind_of.clock_driven(node):
        condition = sql.SQL("{} OR {}").format(condition, abi.v(abi.CLOCK_MOVED))
    return render("program/node_block", condition=condition, body=code,
                  counts=counts, id=sql.Literal(node.id), kind=sql.Literal(node.kind),
                  slow=sql.Literal(SLOW_NODE_MS),
                  analyze=sql.SQL("") if delta_view(node) else analyze_delta(node))


def probe_block(node: Node, parents: list[Node], conn) -> sql.Composed | None:
    """The code that diagnoses the node after one of its statements failed: each
    input's changes, row by row, against the node's expressions over one row (a
    selection's predicate and columns, an aggregate's groups and arguments, a join's
    condition and columns against the other input's history), so that the failure can
    name the row. None where no row-level expression can fail (DISTINCT, set
    operations: their columns pass through)."""
    kind = KINDS[node.kind]
    if kind.probe is None:
        return None
    probes = kind.probe(node, parents)

    def code(parents: list[Node]) -> sql.Composed:
        searches = []
        for p in probes:
            partners = sql.SQL("") if p.partners is None else sql.SQL(
                " FROM {} AS {} WHERE {}").format(parents[p.partners].hist,
                                                  T2 if p.row == T1 else T1,
                                                  sql.SQL(p.condition))
            searches.append(render(
                "program/probe_search", row=p.row, source=parents[p.source].delta,
                exprs=sql.SQL(", ").join(sql.SQL("({})").format(sql.SQL(e)) for e in p.exprs),
                partners=partners, what=sql.Literal(_describe_input(parents[p.source])),
                limit=sql.SQL(" LIMIT 1" if any(map(expands, p.exprs)) else "")))
        return render("program/probe_block", condition=any_rows(*_unique(parents)),
                      searches=sql.SQL("\n").join(searches))

    return per_claim(parents, code, conn)


def _describe_input(node: Node) -> str:
    if node.loaded:
        return f"row of stream {node.hist_ref[1]}"
    return f"row of node {node.id}"


def analyze_delta(node: Node) -> sql.Composed:
    return render("program/analyze_delta", var=var(node.id), delta=node.delta_table,
                  id=sql.Literal(node.id), name=sql.Literal(node.delta_table.as_string(None)))


def rebuildable(node: Node) -> bool:
    """Signed nodes may rebuild their history instead of applying a cycle's changes
    (node_stats, catalog/schema.sql); an insert-only node's changes are an append, never
    dearer. A node that keeps one row for equal values (DISTINCT, a set operation, a
    group) keeps it in the form of its first copy (numeric 0.000 and 0), the form its
    consumers were given and will be asked to retract; rebuilt from its parents, it could
    keep another form with no change told: such a node applies its changes unless each
    of those columns' equal values are the same value."""
    typed = dict(zip(node.columns, node.types))
    return not node.loaded and not node.insert_only and not virtual(node) and all(
        c in typed and identical_when_equal(typed[c]) for c in KINDS[node.kind].first_forms(node))


def rebuild(node: Node, parents: list[Node]) -> list[sql.Composable]:
    """The node's tables emptied and refilled from its parents' (already maintained)
    histories by its own from-scratch SQL: the statements that backfilled it."""
    kind = KINDS[node.kind]
    return ([sql.SQL("DELETE FROM {}").format(t) for t in [node.hist, *kind.aux_tables(node)]]
            + kind.compiler.backfill(node, parents))


def flush_block(node: Node, parents: list[Node], conn, lean: Statements | None = None
                ) -> sql.Composed | None:
    """Maintain the node's history at the end of the cycle, timed: apply the delta, or
    rebuild when the program chose it for this node and cycle (cycle_program.sql). None: the
    history is a view (`virtual`), nothing to maintain. `lean`: as node_block's."""
    steps = COMPILERS[node.kind].flush(node, parents)
    if not steps:
        return None
    apply = per_claim(parents, lambda parents: sql.SQL("\n").join(
        render("program/flush_step", condition=step.condition or sql.SQL("TRUE"),
               statement=_step_code(step, conn, None if lean else _rows(node, parents),
                                    lean=lean))
        for step in COMPILERS[node.kind].flush(node, parents)), conn)
    conditions = [step.condition for step in steps]
    condition = (sql.SQL("TRUE") if None in conditions else sql.SQL(" OR ").join(
        map(sql.SQL, dict.fromkeys(c.as_string(conn) for c in conditions))))
    if rebuildable(node):
        apply = render("program/rebuild_or_apply", id=sql.Literal(node.id), apply=apply,
                       rebuild=sql.SQL("\n").join(
                           sql.SQL("        {};").format(_execute(s.as_string(conn), lean))
                           for s in rebuild(node, parents)))
    return render("program/flush_block", condition=condition, body=apply,
                  id=sql.Literal(node.id), kind=sql.Literal(node.kind),
                  slow=sql.Literal(SLOW_NODE_MS))



def _unique(nodes: list[Node]) -> list[Node]:
    seen, out = set(), []
    for n in nodes:
        if n.id not in seen:
            seen.add(n.id)
            out.append(n)
    return out


def _claim_and_release(streams: list[tuple[str, Node, str | None]], left: frozenset[str],
                       unread: frozenset[str]) -> tuple[sql.Composed, sql.Composed]:
    """The program's claim block and its release block (see `frame`)."""
    inboxes = [stream_inbox(name) for name, _, _ in streams]
    sizes = sql.SQL(", ").join(sql.SQL("pg_total_relation_size({}::regclass)").format(
        sql.Literal(inbox.as_string(None))) for inbox in inboxes)

    def size(i: int) -> sql.SQL:
        return abi.at(abi.SIZE, i + 1)

    # an unread stream's inbox waits until it is taken (abi.TAKE): it makes the claim
    # locked (and is truncated) only then
    large = sql.SQL(" OR ").join(
        render("program/inbox_large", i=sql.Literal(i + 1),
               times=sql.Literal(settings.INBOX_TAKEN_WHOLE)) if name not in unread else
        sql.SQL("({} AND {} > {})").format(take_var(i), size(i), abi.v(abi.INBOX_LIMIT))
        for i, (name, _, _) in enumerate(streams))
    takes = sql.SQL(", ").join(
        sql.SQL("{waiting} OR {limit} IS NULL OR {size} > {limit}").format(
            waiting=abi.v(abi.TAKE_WAITING), limit=abi.v(abi.UNREAD_LIMIT), size=size(i))
        if name in unread else sql.SQL("true") for i, (name, _, _) in enumerate(streams))
    after = sql.SQL(", ").join(  # truncated, or as large as before the claim
        sql.SQL("CASE WHEN {} AND {} THEN 0 ELSE {} END").format(
            abi.v(abi.LOCKED), take_var(i), size(i)) for i in range(len(streams)))
    read = [inbox for inbox, (name, _, _) in zip(inboxes, streams) if name not in unread]
    truncate = ([sql.SQL("        TRUNCATE {};").format(sql.SQL(", ").join(read))]
                if read else []) + [
        render("program/release_unread", take=take_var(i), inbox=inbox)
        for i, (inbox, (name, _, _)) in enumerate(zip(inboxes, streams)) if name in unread]
    variables = sql.SQL(", ").join(abi.claimed(i) for i in range(len(streams)))
    counted = render("program/claimed_signed" if any(is_table(n) for _, n, _ in streams)
                     else "program/claimed_inserted", vars=variables,
                     count=sql.Literal(len(streams)))
    claim_code = render("program/claim_block", claim=claim(streams, unread=unread),
                        claim_locked=claim(streams, locked=True, left=left, unread=unread),
                        hold_locked=hold_locked(streams, unread) or sql.SQL(""),
                        inboxes=sql.SQL(", ").join(inboxes), large=large, takes=takes,
                        sizes=sizes, after=after,
                        vars=variables, counted=counted,
                        written=sql.SQL("\n    ").join(
                            sql.SQL("    {} := {};").format(var(n.id), abi.claimed(i))
                            for i, (_, n, _) in enumerate(streams)),
                        analyze=sql.SQL("\n").join(analyze_delta(n) for name, n, _ in streams
                                                    if name not in unread),
                        # locked, a table's changes and the streams a delta-reader needs
                        # are copied to their delta tables too (`claim`): a tracked
                        # table's 20,000 deletes planned as 1 row made a semi join's
                        # changes a nested loop of 4 * 10^8 rows (found by a helper)
                        analyze_locked=sql.SQL("\n").join(
                            analyze_delta(n) for name, n, _ in streams
                            if name not in unread and (is_table(n) or name not in left)),
                        ids=sql.SQL(", ").join(sql.Literal(n.id) for _, n, _ in streams),
                        names=sql.SQL(", ").join(sql.Literal(name) for name, _, _ in streams),
                        count=sql.Literal(len(streams)))
    release_code = render("program/release_block",
                          truncate=sql.SQL("\n").join(truncate or [sql.SQL("        NULL;")]))
    return claim_code, release_code


# The program's frame is rendered here, with PostgreSQL format() placeholders where the
# nodes' code goes (literal % doubled), one per slot in abi.SLOTS's order.


def frame(streams: list[tuple[str, Node, str | None]],
          left: frozenset[str] = frozenset(), unread: frozenset[str] = frozenset()) -> str:
    """argus_net.cycle_program's body around the nodes' code: claim the streams' inboxes,
    evaluate, choose how to maintain the signed nodes (if any), flush, purge, release
    the inboxes. `left`: the streams whose rows a locked claim leaves in the inbox (see
    `claim`); every other stream's are copied to its delta table, which outlives the
    cycle (a query's changes view reads it). `unread`: the streams no node reads, whose
    rows wait in their inboxes until these grow past settings.unread_inbox_bytes, then
    go to their histories directly."""
    claim_code, release_code = (_claim_and_release(streams, left, unread) if streams
                                else (sql.SQL(""), sql.SQL("")))
    marks = {slot: f"@argus_slot_{slot}@" for slot in abi.SLOTS}
    text = render("program/cycle_program", claim=claim_code, release=release_code,
                  streams=sql.Literal(len(streams)),
                  claimed=sql.SQL("").join(sql.SQL("    {} bigint;\n").format(abi.claimed(i))
                                           for i in range(len(streams))),
                  **{slot: sql.SQL(mark) for slot, mark in marks.items()}).as_string(None)
    text = text.replace("%", "%%")
    for position, slot in enumerate(abi.SLOTS, 1):
        text = text.replace(marks[slot], f"%{position}$s")
    return text


def written(node_ids: list[int], initial: int = 0) -> str:
    """The declaration of the program's counts of rows written (`var`), one per node."""
    if not node_ids:
        return f"    {abi.WRITTEN} bigint[];"
    low, high = min(node_ids), max(node_ids)
    return (f"    {abi.WRITTEN} bigint[] := array_fill({int(initial)}::bigint, "
            f"ARRAY[{high - low + 1}], ARRAY[{low}]);")
