-- At most one row past the bound, and a failure if there is one (argus.within_bound's
-- argument is an uncorrelated subquery: computed once, before any row is read).
, argus_limited AS MATERIALIZED (SELECT * FROM {rows} LIMIT {limit})
, argus_bounded AS (SELECT * FROM argus_limited
                     WHERE argus.within_bound((SELECT count(*) FROM argus_limited), {bound}))
