-- Old left rows touched by the right side's delta whose partner count crosses zero:
-- they gain or lose their place in the output. Counts come from joins grouped by the
-- row's number, so each copy of a duplicated row is judged on its own (the left
-- history may be a view: no ctid).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    WITH l AS MATERIALIZED (
        SELECT row_number() OVER () AS argus_tid, {t1}.* FROM {left} AS {t1}
         WHERE EXISTS (SELECT 1 FROM {right_delta} AS {t2} WHERE {condition}){keyed}
    ), o AS (
        SELECT {t1}.argus_tid, count(*) AS n FROM l AS {t1} JOIN {right} AS {t2} ON {condition}
         GROUP BY 1
    ), d AS (
        SELECT {t1}.argus_tid, sum({t2}.{sign}) AS n
          FROM l AS {t1} JOIN {right_delta} AS {t2} ON {condition} GROUP BY 1
    )
    SELECT {named_exprs},
           CASE WHEN coalesce(o.n, 0) > 0 THEN {on_lost} ELSE {on_gained} END AS {sign}
      FROM l AS {t1}
      LEFT JOIN o ON o.argus_tid = {t1}.argus_tid
      LEFT JOIN d ON d.argus_tid = {t1}.argus_tid
     WHERE (coalesce(o.n, 0) > 0) <> (coalesce(o.n, 0) + coalesce(d.n, 0) > 0)
) AS s
