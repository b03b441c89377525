-- Per-value signed counts of the two inputs (a: left, b: right), cast to the node's
-- column types so that equal values hash equally.
SELECT {u_columns}, {hash} AS argus_hash, sum(u.da) AS da, sum(u.db) AS db
  FROM (SELECT {left_cast}, {left_count} AS da, 0 AS db FROM {left} AS {t1}
        UNION ALL
        SELECT {right_cast}, 0 AS da, {right_count} AS db FROM {right} AS {t2}) AS u
 GROUP BY {u_columns}
