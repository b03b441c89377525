-- Each touched left row's partners in the right history, counted only as far as the
-- answer needs (join/partners_changed): one more than the cycle takes away from it
-- (LIMIT, through the index of the condition's key), not all of them (TPC-H Q13: a
-- customer's ~20 orders were read for each changed one).
CROSS JOIN LATERAL (
           SELECT count(*) AS n FROM (
               SELECT FROM {right} AS {t2} WHERE {condition}
                LIMIT greatest(-coalesce(d.n, 0), 0) + 1) AS p) AS o
