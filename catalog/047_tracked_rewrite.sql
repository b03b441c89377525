-- A tracked table's source rewritten without its rows' changes captured (ALTER TABLE …
-- TYPE … USING: answers kept the old values; a helper's round): each cycle compares the
-- source's file with the one it saw last (filenode) and, when it changed, the source's
-- rows with argus's (resync_sql, stream/resync: argus.resync_rewritten). argus's owner
-- may read the source for it: granted by `track` unless it could already
-- (select_granted: taken back by `untrack`).
-- A table tracked by the slot whose changes cannot be applied stops following its
-- source (stopped: why; argus.read_capture), instead of failing every cycle.
ALTER TABLE argus_catalog.tracked ADD COLUMN filenode oid, ADD COLUMN resync_sql text,
    ADD COLUMN select_granted boolean NOT NULL DEFAULT false, ADD COLUMN stopped text;
