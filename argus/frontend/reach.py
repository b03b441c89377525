"""What a query reaches, by OID, and whether it may run in every cycle.

A query's code runs as argus's owner role in every cycle and its backfill, and through
its results view as whoever reads the answer. Checking the functions it *names* is not
enough: a schema-qualified call, a cast to a domain whose CHECK calls a function, an
operator, an aggregate's transition function all reach code no name shows. PostgreSQL
resolves them in parse analysis without running any of it, and records what the
parsed tree references in pg_depend: so the query becomes a view for a moment (in a
savepoint, rolled back), and every object its tree reaches is walked from there —
operators to their functions, aggregates to their support functions, types to their
domains' constraints, base and element types, and those constraints to their functions.

Parse analysis runs one kind of code: the input function of a literal's type (`'{1}'
::evil.d[]` calls array_in, then domain_in, then the domain's CHECK). So the first
probe has every string literal replaced by NULL, which PostgreSQL types as it types a
literal (`unknown`) and coerces without calling an input function: whatever that
probe reaches is checked before any literal is read. A second probe, with the literals
as written, then calls only input functions the first found trusted, and shows what
names in literals resolve to (`'cfg'::regconfig`).

Every object reached that PostgreSQL did not create with the server (OID ≥ 16384;
built-in functions are checked by name, `argus.frontend.functions`) must be owned by a
superuser or by argus's owner role, must not be argus's own machinery, and a function
that runs as part of the query (called, an operator's or an aggregate's, a domain
constraint's) must be IMMUTABLE. Relations are the stream histories the registrant may
read, nothing else.
"""

from __future__ import annotations

import psycopg
from psycopg import sql
from sqlglot import exp

from ..errors import PermissionDeniedError, QueryError, UnsupportedQueryError
from ..names import NETWORK_SCHEMA, SCHEMAS, STREAMS_SCHEMA
from ..trees import DIALECT, tree_of
from .constants import STRINGS

FIRST_NORMAL_OID = 16384  # PostgreSQL's FirstNormalObjectId: below it, initdb's objects

# What argus writes into a query of its own: the stream clock, and the check that a
# scalar subquery gave one row (argus.frontend.scalar). Neither reads nor writes.
ARGUS_CALLS = ("argus.clock_now()", "argus.one_row(bigint, anyelement)")

# Where the walk starts: what a view's rule references (a query's parse tree), or the
# column types of a table.
_FROM_VIEW = """
    SELECT refclassid::regclass, refobjid, true, 1
      FROM pg_depend
     WHERE classid = 'pg_rewrite'::regclass
       AND objid = (SELECT oid FROM pg_rewrite WHERE ev_class = %(relation)s::regclass)
       AND NOT (refclassid = 'pg_class'::regclass AND refobjid = %(relation)s::regclass)
       AND refobjid >= %(first)s"""
_FROM_TABLE = """
    SELECT 'pg_type'::regclass, atttypid, false, 1
      FROM pg_attribute
     WHERE attrelid = %(relation)s::regclass AND attnum > 0 AND NOT attisdropped
       AND atttypid >= %(first)s"""

# (class, oid, called, depth): `called` marks a function that runs as part of the query, as
# opposed to one PostgreSQL calls to read, print or estimate a value of a type; the
# depth bounds the walk (types and their functions refer to each other).
_REACHED = """
WITH RECURSIVE reached(classid, objid, called, depth) AS (
{seeds}
    UNION
    SELECT e.classid, e.objid, e.called, r.depth + 1
      FROM reached r, LATERAL (
        SELECT 'pg_proc'::regclass, o.oprcode::oid, true
          FROM pg_operator o WHERE r.classid = 'pg_operator'::regclass AND o.oid = r.objid
        UNION ALL
        SELECT 'pg_proc'::regclass, f, false
          FROM pg_operator o, unnest(ARRAY[o.oprrest::oid, o.oprjoin::oid]) f
         WHERE r.classid = 'pg_operator'::regclass AND o.oid = r.objid
        UNION ALL
        SELECT 'pg_proc'::regclass, f, true
          FROM pg_aggregate a, unnest(ARRAY[a.aggtransfn::oid, a.aggfinalfn, a.aggcombinefn,
                                            a.aggserialfn, a.aggdeserialfn, a.aggmtransfn,
                                            a.aggminvtransfn, a.aggmfinalfn]) f
         WHERE r.classid = 'pg_proc'::regclass AND a.aggfnoid = r.objid
        UNION ALL
        SELECT 'pg_proc'::regclass, f, false
          FROM pg_type t, unnest(ARRAY[t.typinput::oid, t.typoutput, t.typreceive,
                                       t.typsend, t.typmodin, t.typmodout, t.typanalyze,
                                       t.typsubscript]) f
         WHERE r.classid = 'pg_type'::regclass AND t.oid = r.objid
        UNION ALL
        SELECT 'pg_type'::regclass, u, false
          FROM pg_type t, unnest(ARRAY[t.typbasetype::oid, t.typelem]) u
         WHERE r.classid = 'pg_type'::regclass AND t.oid = r.objid
        UNION ALL
        SELECT 'pg_type'::regclass, a.atttypid, false
          FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid
         WHERE r.classid = 'pg_type'::regclass AND t.oid = r.objid
           AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT 'pg_type'::regclass, a.atttypid, false
          FROM pg_attribute a
         WHERE r.classid = 'pg_class'::regclass AND a.attrelid = r.objid
           AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT d.refclassid::regclass, d.refobjid, true
          FROM pg_constraint c JOIN pg_depend d ON d.classid = 'pg_constraint'::regclass
                                              AND d.objid = c.oid
         WHERE r.classid = 'pg_type'::regclass AND c.contypid = r.objid
           AND d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass,
                                'pg_type'::regclass)
      ) e(classid, objid, called)
     WHERE e.objid >= %(first)s AND r.depth < 8 AND r.classid IN ('pg_operator'::regclass,
                                                  'pg_proc'::regclass, 'pg_type'::regclass,
                                                  'pg_class'::regclass)
)
SELECT pg_describe_object(r.classid, r.objid, 0), r.classid::text, n.nspname, o.rolname,
       o.rolsuper OR o.oid = (SELECT relowner FROM pg_class
                               WHERE oid = 'argus_catalog.nodes'::regclass) AS trusted,
       bool_or(r.called) FILTER (WHERE p.prokind = 'f' AND p.provolatile <> 'i')
           AS called_not_immutable,
       r.classid = 'pg_proc'::regclass
           AND r.objid = ANY(%(argus_calls)s::regprocedure[]) AS argus_call,
       c.relkind,
       CASE WHEN r.classid = 'pg_class'::regclass
            THEN coalesce(has_table_privilege(%(registrant)s::name, r.objid, 'SELECT'), true)
       END AS readable
  FROM reached r
  LEFT JOIN pg_proc p ON r.classid = 'pg_proc'::regclass AND p.oid = r.objid
  LEFT JOIN pg_operator op ON r.classid = 'pg_operator'::regclass AND op.oid = r.objid
  LEFT JOIN pg_type t ON r.classid = 'pg_type'::regclass AND t.oid = r.objid
  LEFT JOIN pg_class c ON r.classid = 'pg_class'::regclass AND c.oid = r.objid
  LEFT JOIN pg_collation co ON r.classid = 'pg_collation'::regclass AND co.oid = r.objid
  LEFT JOIN pg_ts_config tc ON r.classid = 'pg_ts_config'::regclass AND tc.oid = r.objid
  LEFT JOIN pg_ts_dict td ON r.classid = 'pg_ts_dict'::regclass AND td.oid = r.objid
  LEFT JOIN pg_namespace n
         ON n.oid = coalesce(p.pronamespace, op.oprnamespace, t.typnamespace,
                             c.relnamespace, co.collnamespace, tc.cfgnamespace,
                             td.dictnamespace)
  LEFT JOIN pg_roles o ON o.oid = coalesce(p.proowner, op.oprowner, t.typowner, c.relowner,
                                           co.collowner, tc.cfgowner, td.dictowner)
 WHERE r.classid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_type'::regclass,
                     'pg_class'::regclass, 'pg_collation'::regclass,
                     'pg_ts_config'::regclass, 'pg_ts_dict'::regclass)
 GROUP BY r.classid, r.objid, n.nspname, o.oid, o.rolname, o.rolsuper, c.relkind
 ORDER BY min(r.depth), 1
"""


def check_query(conn: psycopg.Connection, query: str, registrant: str | None = None) -> None:
    """Refuse a query (SQL PostgreSQL can parse as it will run, over the stream
    histories) that reaches code or data it may not; nothing of it runs. Call inside a
    transaction acting as the owner role, before anything plans or runs the query."""
    for text in (_without_literals(query), query):
        _refuse(_probe(conn, text, registrant), registrant)


def _without_literals(query: str) -> str:
    """The query with each string literal a NULL (both of type `unknown` to PostgreSQL:
    the same functions, operators and casts resolve), and each interval literal a NULL
    interval."""
    tree = tree_of(query)
    for cast in tree.find_all(exp.Cast):
        target = cast.to.sql(DIALECT).lower()
        if target.startswith("reg") and not (isinstance(cast.this, exp.Literal)
                                             and cast.this.is_string):
            raise UnsupportedQueryError(
                f"{cast.sql(DIALECT)}", f"a {target} looked up at run time names an object "
                "no check saw: name it with a literal")
    for node in list(tree.find_all(exp.Interval)):
        node.replace(exp.cast(exp.null(), exp.DataType.build("interval")))
    for node in list(tree.find_all(exp.Literal, *STRINGS)):
        if isinstance(node.parent, exp.Extract) and node.arg_key == "this":
            continue  # (EXTRACT('month' FROM t): a field's name, not a value)
        if isinstance(node, STRINGS) or node.is_string:
            node.replace(exp.null())
    return tree.sql(dialect=DIALECT)


def _probe(conn: psycopg.Connection, query: str, registrant: str | None) -> list[tuple]:
    """What the query's parse tree reaches: a view made of it in a savepoint, walked,
    and rolled back."""
    view = sql.Identifier(NETWORK_SCHEMA, "argus_reach_probe")
    with conn.transaction() as savepoint:
        try:
            conn.execute(sql.SQL("CREATE VIEW {} AS SELECT FROM ({}) AS q").format(
                view, sql.SQL(query)))
        except psycopg.Error as exc:
            diag = exc.diag
            hint = f" (hint: {diag.message_hint})" if diag.message_hint else ""
            raise QueryError("PostgreSQL rejects the query: "
                             f"{diag.message_primary or exc}{hint}") from None
        reached = _reached(conn, _FROM_VIEW, view.as_string(conn), registrant)
        raise psycopg.Rollback(savepoint)
    return reached


def check_types(conn: psycopg.Connection, table: sql.Composable,
                registrant: str | None = None) -> None:
    """Refuse a table whose columns' types run code argus may not run (a domain whose
    CHECK calls a registrant's function would run it whenever a cycle writes a
    stream's history)."""
    _refuse(_reached(conn, _FROM_TABLE, table.as_string(conn), registrant), registrant)


def _reached(conn: psycopg.Connection, seeds: str, relation: str, registrant: str | None
             ) -> list[tuple]:
    return conn.execute(_REACHED.replace("{seeds}", seeds), {
        "relation": relation, "first": FIRST_NORMAL_OID,
        "argus_calls": list(ARGUS_CALLS), "registrant": registrant}).fetchall()


def _refuse(reached: list[tuple], registrant: str | None) -> None:
    for what, kind, schema, owner, trusted, not_immutable, argus_call, relkind, readable \
            in reached:
        if kind == "pg_collation":
            continue  # (sorts and compares; a collation runs no code of its owner's)
        if kind == "pg_class" or (kind == "pg_type" and schema == STREAMS_SCHEMA):
            if schema != STREAMS_SCHEMA or relkind not in (None, "r", "p"):
                raise UnsupportedQueryError(
                    what, "a query reads streams and tables of argus only")
            if readable is False:
                raise PermissionDeniedError(
                    f"role {registrant!r} may not read {what}, which the query reads")
            continue
        if argus_call:
            continue
        if schema in SCHEMAS:
            raise UnsupportedQueryError(
                what, "it is argus's own machinery, which a query may not call")
        if not trusted:
            raise UnsupportedQueryError(
                what, f"it is owned by role {owner!r}: what a continuous query reaches "
                "runs in every cycle with the cycle's privileges (and as whoever reads its "
                "answer), so it must be owned by a superuser or by the owner of the argus "
                "catalog")
        if not_immutable:
            raise UnsupportedQueryError(
                what, "a function outside pg_catalog must be IMMUTABLE: it runs in every "
                "cycle with the cycle's privileges")
