-- Old left rows touched by the right side's delta whose partner count crosses zero
-- (join/partners_changed), where the condition has a key the right history's index
-- serves: each row counts its partners there only as far as the answer needs, one
-- more than the delta takes away (LIMIT), not all of them (TPC-H Q13: a customer's
-- ~20 orders read for each changed one, 12 ms a cycle for 280 customers).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    WITH l AS MATERIALIZED (
        SELECT row_number() OVER () AS argus_tid, {t1}.* FROM {left} AS {t1}
         WHERE EXISTS (SELECT 1 FROM {right_delta} AS {t2} WHERE {condition}){keyed}
    ), d AS (
        SELECT {t1}.argus_tid, sum({t2}.{sign}) AS n
          FROM l AS {t1} JOIN {right_delta} AS {t2} ON {condition} GROUP BY 1
    )
    SELECT {named_exprs},
           CASE WHEN o.n > 0 THEN {on_lost} ELSE {on_gained} END AS {sign}
      FROM l AS {t1}
      LEFT JOIN d ON d.argus_tid = {t1}.argus_tid
     CROSS JOIN LATERAL (
           SELECT count(*) AS n FROM (
               SELECT FROM {right} AS {t2} WHERE {condition}
                LIMIT greatest(-coalesce(d.n, 0), 0) + 1) AS p) AS o
     WHERE (o.n > 0) <> (o.n + coalesce(d.n, 0) > 0)
) AS s
