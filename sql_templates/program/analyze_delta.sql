-- Children's statements are planned from the statistics of this delta table, as the
-- planner reads them: the rows per page an earlier ANALYZE counted, times the pages the
-- table has now. When that says far fewer rows than it holds (a delta vacuumed while
-- empty is estimated at one row whatever it holds, and a join over it goes quadratic),
-- or far more, by thousands (a delta analyzed while large, then cleared by DELETE, which
-- leaves its pages: a join over it hashes a whole history instead of probing it), it is
-- analyzed first: a few ms, only when the volume of the cycles changed that much.
-- argus_est holds every delta's rows per page, read once a cycle
-- (argus.delta_estimates); the pages are the file's size (no executor runs for either).
-- Unknown statistics (-1, after a TRUNCATE) are estimated from the table's size and
-- its rows' width, which is right.
        IF argus_est[{id}] >= 0 THEN
            argus_pe := argus_est[{id}] * pg_relation_size({name}::regclass) / 8192.0;
            IF argus_pe > 4 * {var} + 2000 OR {var} > 200 AND argus_pe < {var} / 4.0 THEN
                ANALYZE {delta};
            END IF;
        END IF;
