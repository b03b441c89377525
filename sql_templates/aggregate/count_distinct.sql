-- COUNT(DISTINCT x), each member of x's family: how many values of each group start
-- (+1) or stop (-1) being present, from the (group, value) pairs of the delta with
-- their counts before it (`pairs`: aggregate/count_distinct_pairs).
{name} AS (
    SELECT {x_groups}{comma}{changes}, {x_hash} AS argus_hash
      FROM {pairs} AS x{x_group_by}
)
