-- Roles and privileges (argus.roles): every argus object is owned by the database's
-- owner role; readers, writers and registrars get exactly what they are granted.
ALTER TABLE argus_catalog.settings
    -- the roles are <role_prefix>_owner, _reader, _writer and _registrar (NULL: roles
    -- were never set up, the role that installed argus owns everything)
    ADD COLUMN role_prefix text;

-- Grants to single roles, by query or stream (kind reader: a query's views or a stream's
-- history; writer: a stream's inbox), re-applied whenever argus re-creates an object.
CREATE TABLE argus_catalog.grants (
    kind   text NOT NULL CHECK (kind IN ('reader', 'writer')),
    role   name NOT NULL,
    query  text,
    stream text,
    CHECK ((query IS NULL) <> (stream IS NULL)),
    UNIQUE NULLS NOT DISTINCT (kind, role, query, stream)
);

-- Who registered a query or created a stream: they may drop it, and read it.
ALTER TABLE argus_catalog.queries ADD COLUMN registered_by name NOT NULL DEFAULT current_user;
ALTER TABLE argus_catalog.streams ADD COLUMN created_by name NOT NULL DEFAULT current_user;

-- What registrars ask for: argus code is generated only by the owner's processes
-- (argus worker, argus run, db.process_requests), which read this queue, check the
-- requester's privileges and do the work as the owner. A registrar inserts its own
-- requests and reads only those (row level security); requested_by is set by trigger.
CREATE TABLE argus_catalog.requests (
    request_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind         text NOT NULL CHECK (kind IN ('create_stream', 'drop_stream', 'register',
                                               'unregister')),
    name         text NOT NULL,
    body         jsonb NOT NULL DEFAULT '{}',
    requested_by name NOT NULL DEFAULT current_user,
    requested_at timestamptz NOT NULL DEFAULT now(),
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    error        text,
    error_class  text,                   -- the argus.errors class the requester raises
    done_at      timestamptz
);
CREATE INDEX ON argus_catalog.requests (request_id) WHERE status = 'pending';
ALTER TABLE argus_catalog.requests ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_requests ON argus_catalog.requests
    USING (requested_by = current_user) WITH CHECK (requested_by = current_user);
