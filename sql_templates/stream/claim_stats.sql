-- What a stream's claim took, in one pass: rows admitted, their largest event time,
-- those older than the clock before this cycle (late), and the rows held back
-- ({claimed} has each row's argus_admitted).
{stats} AS (SELECT count(*) FILTER (WHERE argus_admitted) AS n, {latest} AS latest,
                   {late} AS late, count(*) FILTER (WHERE NOT argus_admitted) AS held
              FROM {claimed})
