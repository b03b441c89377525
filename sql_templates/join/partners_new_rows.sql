-- New (or retracted) left rows, judged against the right side's new state: their
-- partners in its history plus the signed partners in its delta. Emitted with their
-- own sign when that count is above zero (semi) or zero (anti, left-join padding).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs}, {t1}.{sign}
      FROM {left_delta} AS {t1}
      LEFT JOIN (SELECT {t1}.ctid AS argus_tid, count(*) AS n
                   FROM {left_delta} AS {t1} JOIN {right} AS {t2} ON {condition}
                  GROUP BY 1) AS o ON o.argus_tid = {t1}.ctid
      LEFT JOIN (SELECT {t1}.ctid AS argus_tid, sum({t2}.{sign}) AS n
                   FROM {left_delta} AS {t1} JOIN {right_delta} AS {t2} ON {condition}
                  GROUP BY 1) AS d ON d.argus_tid = {t1}.ctid
     WHERE coalesce(o.n, 0) + coalesce(d.n, 0) {test}
) AS s
