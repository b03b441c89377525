-- A table's claim counted: its rows in the delta, the retracted ones, and the deletes
-- it ignored (a key the table did not have before the cycle and no change of this
-- cycle gave it, argus_put: logged in argus.runs). (Asked of the claimed rows by NOT
-- EXISTS, PostgreSQL planned a nested loop over two CTEs it took for one row: 20,000
-- key updates in one cycle took 29 s, 100,000 past node_timeout; a helper.)
{stats} AS (
    SELECT count(*) AS n, count(*) FILTER (WHERE {sign} < 0) AS retracted,
           (SELECT count(*) FROM {probed} l
             WHERE l.argus_op = 'd' AND NOT l.argus_had AND NOT l.argus_put) AS ignored
      FROM {moved})
