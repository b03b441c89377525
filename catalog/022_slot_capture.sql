-- Capture by a logical replication slot (argus track --method slot): one slot and one
-- publication per database, read at the start of every cycle (argus.read_capture).
CREATE TABLE argus_catalog.capture_slot (
    slot        name PRIMARY KEY,    -- pg_replication_slots (cluster-wide: named by database)
    publication name NOT NULL,       -- the tracked tables
    reader      text NOT NULL,       -- the function that reads it (argus_inbox."capture slot")
    applied     pg_lsn NOT NULL      -- the changes committed before it are in the inboxes
);

ALTER TABLE argus_catalog.tracked
    ADD COLUMN start_lsn pg_lsn,     -- slot: the source's changes before it are in the backfill
    ADD COLUMN apply_sql text[],     -- slot: stream/capture_slot_apply, stream/capture_truncate
    ADD COLUMN columns jsonb;        -- slot: the source's columns tracked, "type oid/typmod"

-- The changes one cycle read from the slot, until they are in the inboxes.
CREATE UNLOGGED TABLE argus_catalog.captured (
    ord   bigint NOT NULL,
    lsn   pg_lsn NOT NULL,
    relid oid NOT NULL,
    op    "char" NOT NULL,
    new   jsonb,
    old   jsonb,
    missing text[]   -- columns an update left in TOAST that the slot did not carry
);
