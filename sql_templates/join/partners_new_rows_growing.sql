-- New (or retracted) left rows, judged against the right side's new state. The right
-- side only grows, so "has a partner" is an EXISTS in its history or its delta.
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs}, {t1}.{sign} FROM {left_delta} AS {t1}
     WHERE {negate} (EXISTS (SELECT 1 FROM {right} AS {t2} WHERE {condition})
                     OR EXISTS (SELECT 1 FROM {right_delta} AS {t2} WHERE {condition}))
) AS s
