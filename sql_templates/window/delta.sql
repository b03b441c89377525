-- A window node's changes: the partitions its parent's changes touched, their window
-- functions computed again over the parent's rows of them as they are now (its history,
-- plus the rows its delta adds, less one copy per row it retracts), against the rows
-- the node holds for them: +1 for each copy the new rows have more of, -1 for each they
-- have fewer of (EXCEPT ALL counts copies, NULLs equal). A Top-K node keeps only
-- the rows ranked within k (kept). The node's rows of the touched partitions are read
-- once (argus_old), and are the parent's rows there too for a Top-K over a parent that
-- only grows; a parent that only grows retracts nothing ({retracted}: nothing).
INSERT INTO {delta} ({columns}, argus_hash, {sign})
WITH argus_keys AS MATERIALIZED (
    SELECT DISTINCT {key_exprs} FROM {parent_delta} AS {t1}
), argus_old AS MATERIALIZED (
    {touched_here}
), argus_new AS MATERIALIZED (
    SELECT * FROM (SELECT {named} FROM (
        ({parent_touched}
         UNION ALL
         SELECT {p_columns} FROM {parent_delta} AS {t1} WHERE {t1}.{sign} > 0){retracted}
    ) AS {t1}{group_by}) AS argus_w WHERE {kept}
)
SELECT {d_columns}, {d_hash}, 1
  FROM (SELECT {columns} FROM argus_new EXCEPT ALL SELECT {columns} FROM argus_old) AS d
UNION ALL
SELECT {d_columns}, {d_hash}, -1
  FROM (SELECT {columns} FROM argus_old EXCEPT ALL SELECT {columns} FROM argus_new) AS d
