-- Nodes on the signed path carry a hash of each row's value, indexed, so that a
-- retraction finds the copies it removes without scanning the history.
ALTER TABLE {hist} ADD COLUMN argus_hash bigint;
CREATE INDEX ON {hist} (argus_hash)
