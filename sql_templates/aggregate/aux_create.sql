-- The per-(group, value) counts behind one COUNT(DISTINCT x).
CREATE TABLE {aux} AS SELECT {group_named}{comma}({x}) AS v FROM {parent} AS {t1} WITH NO DATA;
ALTER TABLE {aux} ADD COLUMN argus_hash bigint NOT NULL, ADD COLUMN argus_count bigint NOT NULL;
CREATE INDEX ON {aux} (argus_hash)
