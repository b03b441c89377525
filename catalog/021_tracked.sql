-- Change capture (issue 26): tables that follow an ordinary table's changes, written
-- into their inbox by triggers on that table (argus.track).
CREATE TABLE argus_catalog.tracked (
    stream_id  bigint PRIMARY KEY REFERENCES argus_catalog.streams ON DELETE CASCADE,
    source     oid NOT NULL UNIQUE,          -- the tracked table (pg_class)
    method     text NOT NULL DEFAULT 'trigger',
    tracked_at timestamptz NOT NULL DEFAULT now()
);

-- A cycle's deletes of keys a table did not have (ignored), per table.
ALTER TABLE argus_catalog.run_streams ADD COLUMN ignored_deletes bigint NOT NULL DEFAULT 0;
