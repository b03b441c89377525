-- A stream that no query reads is claimed only when its inbox grew past this many bytes
-- (issue 25): until then its rows wait in the inbox, written once, and move the stream
-- clock when they are claimed. NULL: claimed at every cycle, like any stream.
ALTER TABLE argus_catalog.settings
    ADD COLUMN unread_inbox_bytes bigint DEFAULT 16777216;

-- The size of each inbox's file after a cycle's claim (0 when truncated): the next cycle
-- takes an inbox whole only when it grew by more than truncate_inbox_bytes since (a
-- large batch), not whenever its file is large (issue 25: a TRUNCATE makes a new file,
-- 1-2 ms, which cost more than deleting a small batch row by row).
ALTER TABLE argus_catalog.run_streams ADD COLUMN inbox_bytes bigint;
