-- The partitions a Top-K node's parent's changes touched, with how many rows the
-- cycle retracts in each (window/top_prefix reads as many more of its first rows).
SELECT {key_exprs}, count(*) FILTER (WHERE {t1}.{sign} < 0) AS argus_r
  FROM {delta} AS {t1} GROUP BY {positions}
