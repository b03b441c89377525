-- A tracked table's source rewritten in place (ALTER TABLE … TYPE … USING rewrites its
-- rows and no change of them is captured: answers kept the old values; a helper's
-- round): each cycle compares the source's file with the one it saw last (filenode)
-- and says so when it changed (rewritten_at), until `argus resync` compares the rows.
-- A table tracked by the slot whose changes cannot be applied stops following its
-- source (stopped: why; argus.read_capture), instead of failing every cycle.
-- attnums: each tracked column's number in the source, which a column renamed in its
-- place or dropped and added again changes, with no new file and the values argus holds
-- then another column's, or none (a helper).
ALTER TABLE argus_catalog.tracked ADD COLUMN filenode oid, ADD COLUMN rewritten_at timestamptz,
    ADD COLUMN stopped text, ADD COLUMN attnums jsonb;
