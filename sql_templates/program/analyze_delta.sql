-- Children's statements are planned from the statistics of this delta table, as the
-- planner reads them: the rows per page an earlier ANALYZE counted, times the pages the
-- table has now. When that says far fewer rows than it holds (a delta vacuumed while
-- empty is estimated at one row whatever it holds, and a join over it goes quadratic),
-- or far more, by hundreds (a delta analyzed while large, then cleared by DELETE, which
-- leaves its pages: a join over it hashes a whole history instead of probing it), it is
-- analyzed first, only when the volume of the cycles changed that much (on TPC-H with
-- updates, a join hashed all customers for a few dozen rows planned as hundreds).
-- argus_est holds every delta's rows per page, read once a cycle
-- (argus.delta_estimates); the pages are the file's size (no executor runs for either):
-- argus.misjudged, a call (catalog/functions.sql says why not inlined).
-- No statistics (never analyzed, or TRUNCATEd: argus_est negative): the planner fills
-- every page, and at least 10, with live rows of the rows' width. A delta cleared by
-- DELETE since has pages of dead rows, planned as thousands of rows for a few dozen (a
-- join, or a tracked table's MERGE, then hashed a whole history instead of probing
-- it); and a delta never analyzed had any few rows planned as 10 pages of them.
        IF argus.misjudged(argus_est[{id}], {name}::regclass, {var}) THEN
            ANALYZE {delta};
        END IF;
