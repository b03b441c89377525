-- New or retracted left rows, judged against the right side's new state
-- (history + delta): emitted with their own sign when they have (semi) or lack
-- (anti, left-join padding) a partner.
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs}, {t1}.{sign}
      FROM {left_delta} AS {t1}
     WHERE ((SELECT count(*) FROM {right} AS {t2} WHERE {condition})
            + coalesce((SELECT sum({t2}.{sign}) FROM {right_delta} AS {t2} WHERE {condition}), 0))
           {test}
) AS s
