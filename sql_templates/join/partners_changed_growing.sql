-- Old left rows that get their first partner from the right side's delta (the right
-- side only grows, so no row ever loses its last one).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs}, {on_gained} AS {sign} FROM {left} AS {t1}
     WHERE EXISTS (SELECT 1 FROM {right_delta} AS {t2} WHERE {condition}){keyed}
       AND NOT EXISTS (SELECT 1 FROM {right} AS {t2} WHERE {condition})
) AS s
