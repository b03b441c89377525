-- What a stream's claim took, in one pass: rows admitted, their largest event time,
-- those older than the clock before this cycle (late), and the rows held back.
{stats} AS (SELECT count(*) FILTER (WHERE {admitted}) AS n, {latest} AS latest,
                   {late} AS late, count(*) FILTER (WHERE NOT {admitted}) AS held
              FROM {claimed})
