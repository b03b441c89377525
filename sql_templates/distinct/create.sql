-- DISTINCT keeps one row per value with its multiplicity in the input.
CREATE TABLE {hist} AS SELECT {named} FROM {parent} AS {t1} WITH NO DATA;
ALTER TABLE {hist} ADD COLUMN argus_count bigint, ADD COLUMN argus_hash bigint
