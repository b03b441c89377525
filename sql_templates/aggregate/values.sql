-- The (group, value) pairs of a delta or history with their signed counts: the input
-- of COUNT(DISTINCT x) bookkeeping.
SELECT {group_named}{comma}({x}) AS v, {hash} AS argus_hash, sum({count}) AS dn
  FROM {source} AS {t1} WHERE ({x}) IS NOT NULL
 GROUP BY {group_exprs}{comma}({x})
