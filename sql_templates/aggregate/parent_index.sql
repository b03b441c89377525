-- MIN/MAX under retraction re-read the affected groups of the parent: index them, by a
-- hash index (node/hash_index).
CREATE INDEX IF NOT EXISTS {name} ON {parent} USING hash ({hash})
