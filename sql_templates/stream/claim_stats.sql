-- What a stream's claim took, in one pass: rows, the largest event time, and the rows
-- older than the clock before this cycle (late).
{stats} AS (SELECT count(*) AS n, {latest} AS latest, {late} AS late FROM {claimed})
