-- The parent's rows a Top-K node with one partition ranks anew when its parent
-- retracts rows: its first k, plus as many as the cycle retracts, plus their ties, read
-- in order through an index on the ORDER BY columns. Every other row orders after all
-- of them, so once the retracted rows are gone it ranks past k (window/delta).
SELECT {columns} FROM argus_keys AS k CROSS JOIN LATERAL (
    SELECT {p_columns} FROM {parent} AS {t1} WHERE {equal}
     ORDER BY {order} FETCH FIRST (k.argus_r + {k}) ROWS WITH TIES) AS {t1}
