-- The changes made net (query/changes_net), told apart by a hash of each row first:
-- only the rows of a hash that both a retraction and an insertion have (argus_x, found
-- by hashing, not sorting) are compared as they print; every other row passes as it
-- is. A Top-K's rank shifts retract and insert thousands of rows, none of them equal:
-- printed, sorted and windowed whole, they cost twice what they do hashed. Nothing is
-- hashed when the cycle retracted nothing; the changes are read once (argus_c), so
-- that the view is planned as fast as one that reads them four times as text. Only
-- where every output column's type can be hashed (argus.answers.hashable).
WITH argus_c AS MATERIALIZED (
    {changes}
), argus_x AS MATERIALIZED (
    SELECT hash_record_extended(ROW({qualified}), 0) AS argus_hk FROM argus_c
     WHERE EXISTS (SELECT FROM argus_c AS argus_r WHERE argus_r.{sign} < 0)
     GROUP BY 1 HAVING bool_or(argus_c.{sign} < 0) AND bool_or(argus_c.{sign} > 0)
)
SELECT * FROM argus_c
 WHERE NOT EXISTS (SELECT FROM argus_x)
    OR hash_record_extended(ROW({qualified}), 0) NOT IN (SELECT argus_hk FROM argus_x)
UNION ALL
SELECT {columns}, {sign} FROM (
    SELECT argus_c.*, sum(argus_c.{sign}) OVER (PARTITION BY argus_c.argus_k) AS argus_net,
           row_number() OVER (PARTITION BY argus_c.argus_k, argus_c.{sign}) AS argus_n
      FROM (SELECT argus_c.*, ROW({qualified})::text AS argus_k FROM argus_c
             WHERE EXISTS (SELECT FROM argus_x)
               AND hash_record_extended(ROW({qualified}), 0) IN (SELECT argus_hk FROM argus_x)
           ) AS argus_c
) AS argus_c
 WHERE argus_c.{sign} * argus_c.argus_net > 0 AND argus_c.argus_n <= abs(argus_c.argus_net)
