-- A table's claim counted: its rows in the delta, the retracted ones, and the deletes
-- it ignored (a key the table did not have before the cycle and no change of this
-- cycle gave it: logged in argus.runs).
{stats} AS (
    SELECT count(*) AS n, count(*) FILTER (WHERE {sign} < 0) AS retracted,
           (SELECT count(*) FROM {probed} l WHERE l.argus_op = 'd' AND NOT l.argus_had
               AND NOT EXISTS (SELECT FROM {claimed} c WHERE {c_join} AND c.argus_op <> 'd')
           ) AS ignored
      FROM {moved})
