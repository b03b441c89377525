"""Which functions a continuous query may call, and where they live.

A query's code runs in every cycle with the privileges of whoever runs the cycles, so
it may call only functions that compute a value from their arguments:
- PostgreSQL's IMMUTABLE functions, and the STABLE ones in `STABLE_SAFE`, which depend
  on the session's settings (time zone, date style) but read nothing else;
- other IMMUTABLE functions, when a superuser or the owner of the argus catalog owns
  them (whoever owns a function decides what it does; a function the registrant wrote
  would run with the cycle's privileges).
Everything else is refused by name: functions that read relations, files, settings,
the session or the server (`table_to_xml`, `current_setting`, `version`, `pg_read_file`,
`txid_current`, `has_table_privilege`, …), and anything VOLATILE or clock-dependent.

A function found outside `pg_catalog` is written schema-qualified into the node code,
so that the search_path of whoever runs a cycle cannot put another in its place. Names
are looked up on the registering session's own path (settings.user_schemas), while
argus's statements run on a pinned one.
"""

from __future__ import annotations

import psycopg

from ..errors import PermissionDeniedError, UnsupportedQueryError
from ..settings import user_schemas
from .lateral import expands

# STABLE functions of pg_catalog that compute from their arguments and the session's
# settings only (time zone, date style, text search configuration).
STABLE_SAFE = frozenset("""
    to_char to_date to_number to_timestamp make_timestamptz date_trunc date_part extract
    timezone concat concat_ws format length to_json to_jsonb row_to_json json_build_object
    json_build_array jsonb_build_object jsonb_build_array quote_literal quote_nullable
    overlaps enum_first enum_last enum_range to_tsvector to_tsquery plainto_tsquery
    phraseto_tsquery websearch_to_tsquery ts_headline generate_series""".split())

# The stream clock: argus's own, in the argus schema (node code calls argus.clock_now).
ARGUS = frozenset({"argus_now"})

_CANDIDATES = """
SELECT f.name, n.nspname, p.provolatile, p.prokind, p.proretset,
       r.rolsuper OR p.proowner = (SELECT c.relowner FROM pg_class c
                                    WHERE c.oid = 'argus_catalog.nodes'::regclass) AS trusted,
       array_position(%(path)s::text[], n.nspname::text) AS rank,
       coalesce(has_function_privilege(%(registrant)s::name, p.oid, 'EXECUTE'), true)
         AS callable
  FROM unnest(%(names)s::text[]) AS f(name)
  JOIN pg_proc p ON p.proname = f.name
  JOIN pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_roles r ON r.oid = p.proowner
 WHERE n.nspname = ANY(%(path)s::text[])
"""


def check(conn: psycopg.Connection, names: frozenset[str], registrant: str | None = None
          ) -> dict[str, str]:
    """Refuse the functions a query may not call (naming the first), or that the
    registrant may not execute; the schema of each function found outside pg_catalog,
    to qualify its calls with."""
    found: dict[str, list[tuple]] = {}
    for name, schema, volatility, kind, sets, trusted, rank, callable_ in conn.execute(
            _CANDIDATES, {"registrant": registrant, "names": sorted(names - ARGUS),
                          "path": user_schemas(conn)}):
        if not callable_:
            raise PermissionDeniedError(f"role {registrant!r} may not execute the function "
                                        f"{schema}.{name}()")
        if sets and not expands(f"{name}("):
            raise UnsupportedQueryError(
                f"the set-returning function {schema}.{name}()",
                "argus bounds the rows of PostgreSQL's immutable set-returning functions "
                "only (generate_series, unnest, jsonb_array_elements, …)")
        found.setdefault(name, []).append((schema, volatility, kind, trusted, rank))
    schemas = {}
    for name in sorted(found):
        candidates = found[name]
        if all(kind in ("a", "w") for _, _, kind, _, _ in candidates):
            continue  # aggregates: the planner says which it maintains
        first = min(candidates, key=lambda c: c[4])  # as the search_path resolves it
        if first[0] == "pg_catalog":
            mine = [c for c in candidates if c[0] == "pg_catalog" and c[2] == "f"]
            if name in STABLE_SAFE or all(c[1] == "i" for c in mine):
                continue
            raise UnsupportedQueryError(
                f"the function {name}()",
                "it reads data, settings, the session or the server, or changes with the "
                "clock, which a continuous query may not; argus allows PostgreSQL's "
                "IMMUTABLE functions and these stable ones: " + ", ".join(sorted(STABLE_SAFE)))
        mine = [c for c in candidates if c[0] == first[0]]
        if not all(c[1] == "i" and c[3] for c in mine):
            raise UnsupportedQueryError(
                f"the function {first[0]}.{name}()",
                "a function outside pg_catalog must be IMMUTABLE and owned by a superuser "
                "or by the owner of the argus catalog: it runs in every cycle with the "
                "cycle's privileges")
        schemas[name] = first[0]
    return schemas
