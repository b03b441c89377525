-- The (group, value) pairs of a delta or history with each COUNT(DISTINCT value)'s
-- signed count of rows: the input of its family's bookkeeping.
SELECT {group_named}{comma}({x}) AS v, {hash} AS argus_hash{counts}
  FROM {source} AS {t1} WHERE ({x}) IS NOT NULL{also}
 GROUP BY {group_exprs}{comma}({x})
