-- The rows a cycle finds by their argus_hash (the copies a retraction removes, a group,
-- a value's counts), through this index, not by scanning the table. A hash index, not a
-- btree: argus_hash is only ever looked up by equality, and its random values put every
-- btree insert on a random leaf (docs/performance.md, "Fixed costs and index kinds").
CREATE INDEX ON {hist} USING hash (argus_hash)
