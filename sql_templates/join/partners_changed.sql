-- Old left rows whose partner count crosses zero because of the right side's delta:
-- they gain or lose their place in the output.
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs},
           CASE WHEN {t1}.argus_old > 0 THEN {on_lost} ELSE {on_gained} END AS {sign}
      FROM (SELECT {t1}.*,
                   (SELECT count(*) FROM {right} AS {t2} WHERE {condition}) AS argus_old,
                   coalesce((SELECT sum({t2}.{sign}) FROM {right_delta} AS {t2}
                              WHERE {condition}), 0) AS argus_dn
              FROM {left} AS {t1}
             WHERE EXISTS (SELECT 1 FROM {right_delta} AS {t2} WHERE {condition})) AS {t1}
     WHERE ({t1}.argus_old > 0) <> ({t1}.argus_old + {t1}.argus_dn > 0)
) AS s
