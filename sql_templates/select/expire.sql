-- Temporal selection: rows of the node that no longer satisfy the predicate at the new
-- clock leave it (for a lower bound, found through the index on the bound's column).
INSERT INTO {delta} ({columns}, argus_hash, {sign})
SELECT {t1_columns}, {t1}.argus_hash, -1 FROM {hist} AS {t1} WHERE {expired}
