"""Registrars' requests, carried out by the owner's processes.

A registrar may create streams and register queries, but argus code is written only by
processes acting as the owner: otherwise registering would be running code with the
privileges of whoever runs the next cycle. So a registrar's session inserts a request
into argus_catalog.requests (its role recorded by trigger, row level security showing
it only its own) and waits; an owner's process (`argus worker`, `argus run`, or
`db.process_requests()`) checks the requester's privileges — a query may read only
streams the requester may read and call only functions it may execute — does the work
as the owner, and records the outcome. The requester may then read and drop what it
created.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from . import errors, registry, roles, streams
from .errors import ArgusError, PermissionDeniedError
from .names import check_name
from .mqo.sharing import Sharing

WAIT_SECONDS = 60.0


class RequestPendingError(ArgusError):
    """No owner's process carried out the request in time (it stays queued)."""


@dataclass(frozen=True)
class Outcome:
    request_id: int
    kind: str
    name: str
    requested_by: str
    status: str
    error: str | None


def submit(conn: psycopg.Connection, kind: str, name: str, body: dict,
           wait: float = WAIT_SECONDS) -> None:
    """Queue a request and wait until it is carried out; raise its error if it failed."""
    (request_id,) = conn.execute(
        "INSERT INTO argus_catalog.requests (kind, name, body) VALUES (%s, %s, %s) "
        "RETURNING request_id", (kind, name, Jsonb(body))).fetchone()
    deadline = time.monotonic() + wait
    delay = 0.02
    while True:
        status, error, kind_of_error = conn.execute(
            "SELECT status, error, error_class FROM argus_catalog.requests "
            "WHERE request_id = %s", (request_id,)).fetchone()
        if status == "done":
            return
        if status == "failed":
            error_type = getattr(errors, kind_of_error or "", None)
            if not (isinstance(error_type, type) and issubclass(error_type, ArgusError)):
                error_type = ArgusError
            failure = error_type.__new__(error_type)
            Exception.__init__(failure, error)  # the message as the worker wrote it
            raise failure
        if time.monotonic() > deadline:
            raise RequestPendingError(
                f"request {request_id} ({kind} {name}) is queued, but no argus worker "
                f"carried it out within {wait:.0f} s: the database's owner runs `argus "
                "worker` (or `argus run` from cron), which will")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def process(conn: psycopg.Connection, sharing: Sharing | None = None,
            seconds: float | None = None, pause: bool = False) -> list[Outcome]:
    """Carry out the pending requests, each in its own transaction; a request that
    fails, however malformed, changes nothing but its own status. The oldest of the
    role served longest ago first (a role's flood of requests holds no other's back);
    `seconds`: none started after that long (`argus run` must come to its cycle: a
    flood kept it from ever running one; found by a helper), the rest left to the next
    call; `pause` (the owner's `argus worker`): after each request, as long without the
    cycle lock as it held it, so that cycles have half the time however the requests
    come (a registrar's queued slow requests held it back to back, and every cycle run
    without waiting — `argus run` from cron — was skipped meanwhile; two helpers)."""
    done = []
    started = time.monotonic()
    while seconds is None or time.monotonic() - started < seconds:
        began = time.monotonic()
        with conn.transaction():
            row = conn.execute(  # the body as text: read in the request's own try below
                """SELECT r.request_id, r.kind, r.name, r.body::text, r.requested_by
                     FROM argus_catalog.requests r WHERE r.status = 'pending'
                    ORDER BY (SELECT max(o.done_at) FROM argus_catalog.requests o
                               WHERE o.requested_by = r.requested_by AND o.status <> 'pending')
                             NULLS FIRST, r.request_id  -- (the role served longest ago)
                    LIMIT 1 FOR UPDATE SKIP LOCKED""").fetchone()
            if row is None:
                return done
            request_id, kind, name, body, role = row
            status, error, error_class = "done", None, None
            try:
                with conn.transaction():
                    _carry_out(conn, kind, name, body, role, sharing)
            except Exception as exc:  # noqa: BLE001 - no request may stop the queue
                if conn.broken:
                    raise
                status, error = "failed", _message(kind, name, exc)
                error_class = type(exc).__name__ if isinstance(exc, ArgusError) else None
            conn.execute("UPDATE argus_catalog.requests SET status = %s, error = %s, "
                         "error_class = %s, done_at = clock_timestamp() WHERE request_id = %s",
                         (status, error, error_class, request_id))
            done.append(Outcome(request_id, kind, name, role, status, error))
        if pause:
            time.sleep(time.monotonic() - began)
    return done


def _message(kind: str, name: str, exc: Exception) -> str:
    if isinstance(exc, ArgusError):
        message = str(exc)
    elif isinstance(exc, psycopg.Error):
        message = f"{kind} {name}: {exc.diag.message_primary or exc}"
    else:
        message = f"{kind} {name}: argus failed to carry it out ({type(exc).__name__}: {exc})"
    return message.replace("\x00", "\\0")  # text holds no NUL


# What a request's body holds, by kind: field -> (the JSON types it may have, required).
BODIES: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    # columns: [[name, type], …] in order (an object's keys lose their order in jsonb)
    "create_stream": {"columns": ((list, dict), True), "time_column": ((str, type(None)), False)},
    "register": {"sql": ((str,), True), "evaluate": ((str,), False), "force": ((bool,), False)},
    "unregister": {},
    "drop_stream": {},
}


def _checked_body(kind: str, body: object) -> dict:
    """The body, once its shape is the kind's (BODIES)."""
    shape = BODIES.get(kind)
    if shape is None:
        raise ArgusError(f"unknown request {kind!r}")
    if not isinstance(body, dict):
        raise ArgusError(f"a {kind} request's body must be a JSON object, not "
                         f"{_json_type(body)}")
    unknown = sorted(set(body) - set(shape))
    if unknown:
        raise ArgusError(f"a {kind} request's body has unknown fields: {', '.join(unknown)} "
                         f"(it may have: {', '.join(shape) or 'none'})")
    for field, (types, required) in shape.items():
        if field not in body:
            if required:
                raise ArgusError(f"a {kind} request's body has no {field!r}")
        elif not isinstance(body[field], types):
            raise ArgusError(f"a {kind} request's body: {field!r} must be "
                             f"{' or '.join(_json_type(t()) for t in types)}, not "
                             f"{_json_type(body[field])}")
    if kind == "create_stream":
        columns = body["columns"]
        pairs = list(columns.items()) if isinstance(columns, dict) else columns
        if not all(isinstance(p, (list, tuple)) and len(p) == 2
                   and all(isinstance(x, str) for x in p)
                   for p in pairs):
            raise ArgusError("a create_stream request's body: columns are [name, type] pairs "
                             "(strings), in order")
        body = {**body, "columns": dict(pairs)}
    return body


def forcing_refused(name: str) -> PermissionDeniedError:
    return PermissionDeniedError(f"query {name!r}: forcing a registration past "
                                 "max_query_state and state_budget is the owner's "
                                 "decision, not a registrar's")


def _registrar_now(conn: psycopg.Connection, role: str) -> bool:
    """The requester's rights when its request is carried out, not when it was queued.
    Not argus's own group roles': every registrar may SET ROLE to the registrar group,
    which made it a second identity of each (its own 100 requests; streams every
    registrar could write; a helper)."""
    owner = roles.owner_role(conn)
    if owner is None:
        return True  # no roles here: only the installing role reaches argus at all
    if role in roles.group_roles(owner).values():
        raise PermissionDeniedError(f"role {role!r} is one of argus's own group roles: a "
                                    "request is made as one's own role (RESET ROLE)")
    (now,) = conn.execute(
        "SELECT CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = %(role)s) "
        "THEN pg_has_role(%(role)s, %(registrar)s, 'MEMBER') "
        "OR pg_has_role(%(role)s, %(owner)s, 'MEMBER') ELSE false END",
        {"role": role, "registrar": owner.removesuffix("_owner") + "_registrar",
         "owner": owner}).fetchone()
    return now


def _json_type(value: object) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null", int: "a number", float: "a number"}.get(type(value), "?")


def _carry_out(conn: psycopg.Connection, kind: str, name: str, text: str, role: str,
               sharing: Sharing | None) -> None:
    try:
        body = json.loads(text)
    except RecursionError:
        raise ArgusError(f"a {kind} request's body nests too deeply to be read") from None
    body = _checked_body(kind, body)
    # a registrar's request runs under the cycles' time limit (settings.node_timeout),
    # each statement and all of them: a query whose planning or backfills compute for
    # hours is refused, not waited for, and holds the cycle lock no longer
    # (node_timeout() is in milliseconds, as statement_timeout takes it: read as an
    # interval, 5 s were 5,000 s — a helper's request held the lock 65 s under 5 s)
    (limit,) = conn.execute(
        "SELECT set_config('statement_timeout', coalesce(argus.node_timeout(), '0'), true), "
        "coalesce(argus.node_timeout(), '0')::bigint / 1000.0").fetchone()[1:]
    with _at_most(conn, float(limit), f"{kind.replace('_', ' ')} {name}"):
        _carried_out(conn, kind, name, body, role, sharing)


@contextlib.contextmanager
def _at_most(conn: psycopg.Connection, seconds: float, what: str) -> Iterator[None]:
    """The block's statements cancelled once `seconds` (0: never) have passed since it
    began: one request registering a query of six backfills held the cycle lock six
    times node_timeout (found by a helper). A cancel is sent only while the block runs
    (a late one finds the session idle, which ignores it); and no statement starts past
    the time: a query's planning in Python between its many short statements held the
    lock 65 s under a 5 s node_timeout (a helper's UNION ALL of 40 IN lists)."""
    if not seconds:
        yield
        return
    lock, state = threading.Lock(), {"running": True, "fired": False}
    deadline, plain = time.monotonic() + seconds, conn.cursor_factory

    class Bounded(plain):  # type: ignore[misc, valid-type]
        def execute(self, *args, **kwargs):
            if time.monotonic() > deadline:
                state["fired"] = True
                raise psycopg.errors.QueryCanceled("node_timeout has passed")
            return super().execute(*args, **kwargs)

    conn.cursor_factory = Bounded

    def cancel() -> None:
        with lock:
            if state["running"]:
                state["fired"] = True
                conn.cancel_safe()

    timer = threading.Timer(seconds, cancel)
    timer.daemon = True
    timer.start()
    try:
        yield
    except Exception:  # (however a step reported the cancel: registration's QueryError)
        if state["fired"]:
            raise ArgusError(f"{what}: carrying it out took longer than the cycles' time "
                             f"limit, node_timeout ({seconds:g} s), in all: refused") from None
        raise
    finally:
        conn.cursor_factory = plain
        with lock:
            state["running"] = False
        timer.cancel()


def _carried_out(conn: psycopg.Connection, kind: str, name: str, body: dict, role: str,
                 sharing: Sharing | None) -> None:
    if not _registrar_now(conn, role):
        raise PermissionDeniedError(f"role {role!r} is no longer a registrar of this "
                                    f"database: its request to {kind.replace('_', ' ')} "
                                    f"{name!r} was not carried out")
    if kind == "create_stream":
        name = streams.create_stream(conn, name, body["columns"], body.get("time_column")).name
        conn.execute("UPDATE argus_catalog.streams SET created_by = %s WHERE name = %s",
                     (role, name))
        for grant in ("reader", "writer"):
            roles.grant(conn, grant, role, stream=name)
    elif kind == "register":
        if body.get("force"):
            raise forcing_refused(name)
        registry.register(conn, name, body["sql"], sharing or Sharing(),
                          registrant=role, evaluate=body.get("evaluate", "incremental"))
        conn.execute("UPDATE argus_catalog.queries SET registered_by = %s WHERE name = %s",
                     (role, check_name(name, "query")))
        roles.grant(conn, "reader", role, query=name)
    else:
        table, what = (("queries", "query") if kind == "unregister" else ("streams", "stream"))
        who = "registered_by" if kind == "unregister" else "created_by"
        row = conn.execute(sql.SQL("SELECT {} FROM {} WHERE name = %s").format(
            sql.Identifier(who), sql.Identifier("argus_catalog", table)),
            (check_name(name, what),)).fetchone()
        if row is not None and row[0] != role:
            raise PermissionDeniedError(
                f"{what} {name!r} was created by role {row[0]!r}: role {role!r} may not "
                "drop it")
        if kind == "unregister":
            registry.unregister(conn, name)
        else:
            streams.drop_stream(conn, name)
