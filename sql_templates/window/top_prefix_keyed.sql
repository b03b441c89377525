-- The parent's rows a Top-K node ranks anew in each partition the cycle touched when
-- its parent retracts rows (window/top_prefix): the partition's first k, plus as many
-- as the cycle retracts there, plus their ties, read in order through an index on the
-- partition keys and the ORDER BY columns; a partition with a NULL key by IS NOT
-- DISTINCT FROM, without it.
SELECT {columns} FROM argus_keys AS k CROSS JOIN LATERAL (
    SELECT {p_columns} FROM {parent} AS {t1} WHERE {equal}
     ORDER BY {order} FETCH FIRST (k.argus_r + {k}) ROWS WITH TIES) AS {t1}
 WHERE ROW({k_keys}) IS NOT NULL
UNION ALL
SELECT {columns} FROM argus_keys AS k CROSS JOIN LATERAL (
    SELECT {p_columns} FROM {parent} AS {t1}
     WHERE ROW({keys}) IS NOT DISTINCT FROM ROW({k_keys})
     ORDER BY {order} FETCH FIRST (k.argus_r + {k}) ROWS WITH TIES) AS {t1}
 WHERE NOT (ROW({k_keys}) IS NOT NULL)
