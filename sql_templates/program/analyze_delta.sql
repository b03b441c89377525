-- Children's statements are planned from the statistics of this delta table, which an
-- earlier cycle (or autovacuum) took: when they say far fewer rows than it holds now (a
-- delta vacuumed while empty is estimated at one row whatever it holds, and a join over
-- it goes quadratic), or far more (a delta analyzed after a large cycle, then cleared by
-- DELETE, is estimated at that size, and a join over it hashes a whole history instead
-- of probing it), it is analyzed first: a few ms, only when the volume of the cycles
-- changed that much. argus_est holds every delta's estimate, read once a cycle
-- (argus.delta_estimates): the check is a plain comparison. Unknown statistics (-1,
-- after a TRUNCATE) are estimated from the table's size, which is right.
        IF argus_est[{id}] >= 0 AND ({var} > 200 AND argus_est[{id}] <= {var} / 4.0
                                     OR argus_est[{id}] > 4 * {var} + 100) THEN
            ANALYZE {delta};
        END IF;
