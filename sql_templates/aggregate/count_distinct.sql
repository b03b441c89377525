-- COUNT(DISTINCT x): how many values of each group start (+1) or stop (-1) being
-- present, from the per-(group, value) counts kept in the node's aux table.
cd{k} AS (
    SELECT {x_groups}{comma}sum(CASE WHEN x.old = 0 AND x.old + x.dn > 0 THEN 1
                                    WHEN x.old > 0 AND x.old + x.dn <= 0 THEN -1
                                    ELSE 0 END) AS c, {x_hash} AS argus_hash
      FROM (SELECT dd.*, coalesce(a.argus_count, 0) AS old
              FROM ({values}) AS dd
              LEFT JOIN {aux} AS a ON a.argus_hash = dd.argus_hash
                   AND CASE WHEN ROW({a_key}) IS NOT DISTINCT FROM ROW({dd_key}) THEN true ELSE false END) AS x{x_group_by}
)
