-- Rows of the node that no longer satisfy its time bound at the new clock leave it: a
-- temporal selection's (for a lower bound, found through the index on the bound's
-- column), or a join's whose rows expire by themselves (nodes/expiry, by argus_expiry).
INSERT INTO {delta} ({columns}, argus_hash, {sign})
SELECT {t1_columns}, {t1}.argus_hash, -1 FROM {hist} AS {t1} WHERE {expired}
