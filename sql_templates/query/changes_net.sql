-- The changes made net: a row both retracted and inserted in one cycle (a join's
-- partners swapped, a value that left and came back, an output that reads the clock)
-- appears with one sign only, as many times as its net count, and not at all when that
-- is 0 (Materialize's consolidated SUBSCRIBE, DBSP's Z-sets). Rows are told apart as
-- they print (ROW(…)::text), so a value that changed only its spelling (1 -> 1.0)
-- is retracted and inserted. Changes without a retraction pass as they are: of the two
-- branches, the one-time filters run one.
SELECT * FROM ({changes}) AS argus_c
 WHERE NOT EXISTS (SELECT FROM ({changes}) AS argus_r WHERE argus_r.{sign} < 0)
UNION ALL
SELECT {columns}, {sign} FROM (
    SELECT argus_c.*, sum(argus_c.{sign}) OVER (PARTITION BY argus_c.argus_k) AS argus_net,
           row_number() OVER (PARTITION BY argus_c.argus_k, argus_c.{sign}) AS argus_n
      FROM (SELECT argus_c.*, ROW({qualified})::text AS argus_k
              FROM ({changes}) AS argus_c) AS argus_c
) AS argus_c
 WHERE EXISTS (SELECT FROM ({changes}) AS argus_r WHERE argus_r.{sign} < 0)
   AND argus_c.{sign} * argus_c.argus_net > 0 AND argus_c.argus_n <= abs(argus_c.argus_net)
