-- Tables (issue 26): inputs that accept inserts, updates and deletes by a declared key.
-- A table is a stream whose source node is not insert-only; NULL: an insert-only stream.
ALTER TABLE argus_catalog.streams ADD COLUMN primary_key text[];
