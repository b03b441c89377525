-- The touched partitions' rows (window/touched's first part), read partition by
-- partition through the index on the keys while the partitions are under 1/{ratio} of
-- the source's rows ({rows}), else by the planner's join; chosen as the statement runs,
-- by one-time filters over the partitions counted. The planner merge-joined the whole
-- index where the touched partitions were a fifth of the kept ones (Nexmark q19: 69,106
-- rows read for 1,464 auctions' 14,616).
SELECT {t1}.* FROM argus_keys AS k CROSS JOIN LATERAL (
    SELECT {columns} FROM {source} AS {t1} WHERE {equal} OFFSET 0) AS {t1}
 WHERE (SELECT count(*) FROM argus_keys) * {ratio} < coalesce({rows}, 0)
UNION ALL
SELECT {columns} FROM argus_keys AS k JOIN {source} AS {t1} ON {equal}
 WHERE NOT ((SELECT count(*) FROM argus_keys) * {ratio} < coalesce({rows}, 0))