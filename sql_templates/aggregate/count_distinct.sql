-- COUNT(DISTINCT x), each member of x's family: how many values of each group start
-- (+1) or stop (-1) being present, from the per-(group, value) counts kept in the
-- node's aux table.
{name} AS (
    SELECT {x_groups}{comma}{changes}, {x_hash} AS argus_hash
      FROM (SELECT dd.*{olds}
              FROM ({values}) AS dd
              LEFT JOIN {aux} AS a ON a.argus_hash = dd.argus_hash
                   AND CASE WHEN ROW({a_key}) IS NOT DISTINCT FROM ROW({dd_key}) THEN true ELSE false END) AS x{x_group_by}
)
