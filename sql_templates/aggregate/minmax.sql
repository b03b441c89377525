-- MIN/MAX of groups that lost rows: re-read only those groups (found through the
-- parent's hash index) and combine with the delta, counting each value's copies.
-- argus_hash (of the group) lets the result be hash-joined to the changed groups.
mm{k} AS (
    SELECT {w_groups}{comma}{func}(w.v) AS v, {w_hash} AS argus_hash FROM (
        SELECT {u_groups}{comma}u.v FROM (
            SELECT {group_named}{comma}({x}) AS v, 1 AS c FROM {parent} AS {t1}
             WHERE {affected}
            UNION ALL
            SELECT {group_named}{comma}({x}) AS v, {t1}.{sign} AS c FROM {parent_delta} AS {t1}
        ) AS u WHERE u.v IS NOT NULL GROUP BY {u_groups}{comma}u.v{told} HAVING sum(u.c) > 0
    ) AS w{w_group_by}
)
