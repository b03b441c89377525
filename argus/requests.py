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

import time
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
            raise (error_type if isinstance(error_type, type) and issubclass(
                error_type, ArgusError) else ArgusError)(error)
        if time.monotonic() > deadline:
            raise RequestPendingError(
                f"request {request_id} ({kind} {name}) is queued, but no argus worker "
                f"carried it out within {wait:.0f} s: the database's owner runs `argus "
                "worker` (or `argus run` from cron), which will")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def process(conn: psycopg.Connection, sharing: Sharing | None = None) -> list[Outcome]:
    """Carry out every pending request, oldest first, each in its own transaction; a
    request that fails changes nothing but its own status."""
    done = []
    while True:
        with conn.transaction():
            row = conn.execute(
                "SELECT request_id, kind, name, body, requested_by FROM argus_catalog.requests"
                " WHERE status = 'pending' ORDER BY request_id LIMIT 1 FOR UPDATE SKIP LOCKED"
            ).fetchone()
            if row is None:
                return done
            request_id, kind, name, body, role = row
            status, error, error_class = "done", None, None
            try:
                with conn.transaction():
                    _carry_out(conn, kind, name, body, role, sharing)
            except ArgusError as exc:
                status, error, error_class = "failed", str(exc), type(exc).__name__
            except psycopg.Error as exc:
                status, error = "failed", f"{kind} {name}: {exc.diag.message_primary or exc}"
            conn.execute("UPDATE argus_catalog.requests SET status = %s, error = %s, "
                         "error_class = %s, done_at = now() WHERE request_id = %s",
                         (status, error, error_class, request_id))
            done.append(Outcome(request_id, kind, name, role, status, error))


def _carry_out(conn: psycopg.Connection, kind: str, name: str, body: dict, role: str,
               sharing: Sharing | None) -> None:
    if kind == "create_stream":
        name = streams.create_stream(conn, name, body["columns"], body.get("time_column")).name
        conn.execute("UPDATE argus_catalog.streams SET created_by = %s WHERE name = %s",
                     (role, name))
        for grant in ("reader", "writer"):
            roles.grant(conn, grant, role, stream=name)
    elif kind == "register":
        registry.register(conn, name, body["sql"], sharing or Sharing(), body.get("force", False),
                          registrant=role, evaluate=body.get("evaluate", "incremental"))
        conn.execute("UPDATE argus_catalog.queries SET registered_by = %s WHERE name = %s",
                     (role, check_name(name, "query")))
        roles.grant(conn, "reader", role, query=name)
    elif kind in ("unregister", "drop_stream"):
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
    else:
        raise ArgusError(f"unknown request {kind!r}")
