-- The rows of `source` in the partitions the cycle touched (argus_keys): found by the
-- keys' equality, through an index, where they are all set; by IS NOT DISTINCT FROM
-- where one is NULL (PARTITION BY puts NULLs together), read only when a touched
-- partition has a NULL key. ({found}: the join, or window/touched_probed.)
{found}
UNION ALL
SELECT {columns} FROM {source} AS {t1}
 WHERE EXISTS (SELECT FROM argus_keys AS k WHERE NOT (ROW({k_keys}) IS NOT NULL))
   AND NOT (ROW({keys}) IS NOT NULL)
   AND EXISTS (SELECT FROM argus_keys AS k WHERE ROW({k_keys}) IS NOT DISTINCT FROM ROW({keys}))
