-- The changes made net (query/changes_net), told apart by a hash of each row first: a
-- row whose hash no change of the other sign shares is passed as it is, and only the
-- rows of a hash both signs share are compared as they print. Hashing is far cheaper
-- than printing each row (a Top-K's rank shifts retract and insert thousands of rows,
-- none of them equal). Only where every output column's type can be hashed
-- (argus.answers.hashable). The CTEs run only when a retraction is there to net.
WITH argus_h AS MATERIALIZED (
    SELECT argus_c.*, hash_record_extended(ROW({qualified}), 0) AS argus_hk
      FROM ({changes}) AS argus_c
), argus_m AS MATERIALIZED (
    SELECT argus_h.*, bool_or(argus_h.{sign} < 0) OVER argus_w
                      AND bool_or(argus_h.{sign} > 0) OVER argus_w AS argus_mixed
      FROM argus_h WINDOW argus_w AS (PARTITION BY argus_h.argus_hk)
)
SELECT * FROM ({changes}) AS argus_c
 WHERE NOT EXISTS (SELECT FROM ({changes}) AS argus_r WHERE argus_r.{sign} < 0)
UNION ALL
SELECT {columns}, {sign} FROM argus_m
 WHERE EXISTS (SELECT FROM ({changes}) AS argus_r WHERE argus_r.{sign} < 0)
   AND NOT argus_m.argus_mixed
UNION ALL
SELECT {columns}, {sign} FROM (
    SELECT argus_c.*, sum(argus_c.{sign}) OVER (PARTITION BY argus_c.argus_k) AS argus_net,
           row_number() OVER (PARTITION BY argus_c.argus_k, argus_c.{sign}) AS argus_n
      FROM (SELECT argus_c.*, ROW({qualified})::text AS argus_k
              FROM argus_m AS argus_c WHERE argus_c.argus_mixed) AS argus_c
) AS argus_c
 WHERE EXISTS (SELECT FROM ({changes}) AS argus_r WHERE argus_r.{sign} < 0)
   AND argus_c.{sign} * argus_c.argus_net > 0 AND argus_c.argus_n <= abs(argus_c.argus_net)
