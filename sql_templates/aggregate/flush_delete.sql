-- On Citus (else flush_delete_tid): a group that vanished, retracted and no new row for
-- it, found by its group. The delta's rows are chosen in a subquery of their own, which
-- Citus can run on the coordinator and send to the shards (it plans no correlated
-- subquery over a table of the coordinator's).
DELETE FROM {hist} AS h USING (
    SELECT * FROM {delta} AS d
     WHERE d.{sign} < 0
       AND NOT EXISTS (SELECT 1 FROM {delta} AS p WHERE p.{sign} > 0 AND {renewed})
) AS d
 WHERE {found}
