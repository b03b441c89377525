-- A window node's changes: the partitions its parent's changes touched, their window
-- functions computed again over the parent's rows of them as they are now (its history,
-- plus the rows its delta adds, less one copy per row it retracts), against the rows
-- the node holds for them, in one pass: per row value, +1 for each copy the new rows
-- have more of, -1 for each they have fewer of (NULLs equal), each retracted copy with
-- the ctid of a held row of that value, which the flush deletes (window/flush_delete).
-- A Top-K node keeps only the rows ranked within k (kept); over a parent that only
-- grows, it is maintained by window/delta_topk; over one that retracts, it reads only
-- each partition's first rows ({parent_touched}: window/top_prefix). The node's rows of the touched
-- partitions are read once (argus_old); the parent's rows less its retracted ones are
-- {rows} (nodes.window.less_retracted: a parent that only grows retracts nothing), and
-- rows per value are counted apart where equal values can differ ({identity}: 2.0, 2.000).
INSERT INTO {delta} ({columns}, argus_hash, {sign}, argus_ctid)
WITH argus_keys AS MATERIALIZED (
    {touched_keys}
), argus_old AS MATERIALIZED (
    {touched_here}
), argus_new AS (
    SELECT * FROM (SELECT {named} FROM (
        {rows}
    ) AS {t1}{group_by}) AS argus_w WHERE {kept}
), argus_diff AS (
    SELECT {columns}, sum(argus_s) AS argus_n,
           array_agg(argus_ctid) FILTER (WHERE argus_s < 0) AS argus_tids
      FROM (SELECT {columns}, 1 AS argus_s, NULL::tid AS argus_ctid FROM argus_new
            UNION ALL
            SELECT {columns}, -1, argus_ctid FROM argus_old) AS u
     GROUP BY {columns}{identity} HAVING sum(argus_s) <> 0
)
SELECT {d_columns}, {d_hash}, sign(d.argus_n)::smallint,
       CASE WHEN d.argus_n < 0 THEN d.argus_tids[i] END
  FROM argus_diff AS d, generate_series(1, abs(d.argus_n)) AS i
