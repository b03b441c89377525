-- Nodes on the signed path carry a hash of each row's value, indexed (node/hash_index)
-- where a retraction finds the copies it removes by it rather than by their ctids.
ALTER TABLE {hist} ADD COLUMN argus_hash bigint
