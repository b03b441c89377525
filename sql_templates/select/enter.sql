-- Temporal selection that is not a lower bound: old rows of the parent that satisfy
-- the predicate at the new clock but did not at the previous one enter the node.
INSERT INTO {delta} ({columns}, argus_hash, {sign})
SELECT {s_columns}, {hash_expr}, 1 FROM (
    SELECT {named_exprs} FROM {parent} AS {t1}
     WHERE ({predicate}) AND NOT coalesce(({previous}), false)
) AS s
