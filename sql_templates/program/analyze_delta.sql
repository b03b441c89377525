-- Children's statements are planned from the statistics of this delta table, which
-- autovacuum took at some earlier cycle. When they say far fewer rows than it holds now
-- (a delta vacuumed while empty is estimated at one row whatever it holds, and a join
-- over it goes quadratic), it is analyzed first: a few ms, only when the volume of the
-- cycles changed that much. Unknown statistics (-1, after a TRUNCATE) are estimated
-- from the table's size, which is right.
-- (Two IFs: a condition with a subquery runs the executor at every evaluation, ~20 us
-- at every node of every cycle; a plain comparison is evaluated without it.)
        IF {var} > 200 THEN
            IF (SELECT c.reltuples FROM pg_class c
                 WHERE c.oid = {name}::regclass) BETWEEN 0 AND {var} / 4.0 THEN
                ANALYZE {delta};
            END IF;
        END IF;
