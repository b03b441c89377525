-- On a Citus coordinator, a node's history may be a distributed table, sharded over
-- the workers by this column of it (argus.citus.shard): its flushes find a row by the
-- column and its ctid together, since a ctid names a row only within one shard.
ALTER TABLE argus_catalog.nodes ADD COLUMN sharded_by text;
