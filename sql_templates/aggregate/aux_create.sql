-- The per-(group, value) counts behind a family of COUNT(DISTINCT x) of one x, one
-- count column per member (the rows its FILTER passes). fillfactor 50: counts are
-- updated in place, and free room in each page keeps those updates HOT (argus_hash,
-- the only indexed column, does not change): no index entry per update.
CREATE TABLE {aux} WITH (fillfactor = 50) AS
    SELECT {group_named}{comma}({x}) AS v FROM {parent} AS {t1} WITH NO DATA;
ALTER TABLE {aux} ADD COLUMN argus_hash bigint NOT NULL{counts}
