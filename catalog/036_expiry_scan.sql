-- A node whose rows expire by themselves (nodes/expiry) finds the rows that left by an
-- index of the columns they expire by, or, where a large share of its history leaves
-- at every cycle, by scanning it: an index entry costs every row that comes in about
-- 2 us, a scan about 0.05 us a row held (docs/windows.md). argus.expiry_upkeep decides
-- from the cycles; the code is the same both ways (PostgreSQL plans the scan).
ALTER TABLE argus_catalog.nodes
    ADD COLUMN expires_by     text[],                        -- NULL: rows leave otherwise
    ADD COLUMN expiry_scanned boolean NOT NULL DEFAULT false; -- no index: found by a scan
