-- MIN/MAX of the groups whose last row at the extreme left ({affected}): re-read only
-- those groups (found through the parent's hash index), combined with their delta
-- rows counting each value's copies (apart from an equal one of other text where they
-- can differ: 2.0 and 2.000, the extreme being one that remains), and keep the extreme
-- with its number of rows, equal ones of every text counted together ({count}).
mm{k} AS (
    SELECT {w_groups}{comma}w.v, w.argus_c AS c, {w_hash} AS argus_hash FROM (
        SELECT x.*, row_number() OVER ({partition}ORDER BY x.v {order}) AS argus_rank,
               {count} AS argus_c FROM (
            SELECT {u_groups}{comma}u.v, sum(u.c) AS c FROM (
                SELECT {group_named}{comma}({x}) AS v, 1 AS c FROM {parent} AS {t1}
                 WHERE {affected}
                UNION ALL
                SELECT {group_named}{comma}({x}) AS v, {t1}.{sign} AS c FROM {parent_delta} AS {t1}
                 WHERE {affected}
            ) AS u WHERE u.v IS NOT NULL GROUP BY {u_groups}{comma}u.v{told} HAVING sum(u.c) > 0
        ) AS x
    ) AS w WHERE w.argus_rank = 1
)
