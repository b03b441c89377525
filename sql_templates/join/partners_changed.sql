-- Old left rows touched by the right side's delta whose partner count crosses zero:
-- they gain or lose their place in the output. Counts come from joins grouped by the
-- row's number, so each copy of a duplicated row is judged on its own (the left
-- history may be a view: no ctid). {partners}: o(n), each row's partners in the right
-- history before the cycle, all of them (join/partners_all) or as many as the answer
-- needs (join/partners_needed).
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
           CASE WHEN coalesce(o.n, 0) > 0 THEN {on_lost} ELSE {on_gained} END AS {sign}
      FROM l AS {t1}
      LEFT JOIN d ON d.argus_tid = {t1}.argus_tid
     {partners}
     WHERE (coalesce(o.n, 0) > 0) <> (coalesce(o.n, 0) + coalesce(d.n, 0) > 0)
) AS s
