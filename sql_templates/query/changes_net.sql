-- The changes made net: a row both retracted and inserted in one cycle (a join's
-- partners swapped, a value that left and came back, an output that reads the clock)
-- appears with one sign only, as many times as its net count, and not at all when that
-- is 0 (Materialize's consolidated SUBSCRIBE, DBSP's Z-sets). Rows are told apart as
-- they print (ROW(…)::text), so a value that changed only its spelling (1 -> 1.0)
-- is retracted and inserted; but only the rows of a hash that both a retraction and an
-- insertion have (argus_x, found by a hash aggregate, not a sort) are printed and
-- compared: every other row passes as it is. A Top-K's rank shifts retract and insert
-- thousands of rows, none of them equal. {hash}: hash_record_extended of the row where
-- every output type hashes (argus.answers.hashable), else of its text: the changes are
-- read once (argus_c, MATERIALIZED), and nothing is hashed when the cycle
-- retracted nothing. Or, when the output is the top node's whole row, the hash its delta
-- holds (argus_c.argus_hk): then the changes are read where they are (NOT MATERIALIZED),
-- argus_x from their hashes and signs alone, without copying whole rows first.
WITH argus_c AS {materialized} (
    {changes}
), argus_x AS MATERIALIZED (
    SELECT {hash} AS argus_hk FROM argus_c
     WHERE EXISTS (SELECT FROM argus_c AS argus_r WHERE argus_r.{sign} < 0)
     GROUP BY 1 HAVING bool_or(argus_c.{sign} < 0) AND bool_or(argus_c.{sign} > 0)
)
SELECT {columns}, {sign} FROM argus_c
 WHERE NOT EXISTS (SELECT FROM argus_x) OR {hash} NOT IN (SELECT argus_hk FROM argus_x)
UNION ALL
SELECT {columns}, {sign} FROM (
    SELECT argus_c.*, sum(argus_c.{sign}) OVER (PARTITION BY argus_c.argus_k) AS argus_net,
           row_number() OVER (PARTITION BY argus_c.argus_k, argus_c.{sign}) AS argus_n
      FROM (SELECT argus_c.*, ROW({qualified})::text AS argus_k FROM argus_c
             WHERE EXISTS (SELECT FROM argus_x) AND {hash} IN (SELECT argus_hk FROM argus_x)
           ) AS argus_c
) AS argus_c
 WHERE argus_c.{sign} * argus_c.argus_net > 0 AND argus_c.argus_n <= abs(argus_c.argus_net)
