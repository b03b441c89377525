-- Selection is evaluated on the parent's delta only; signs pass through unchanged.
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs}, {t1}.{sign} FROM {parent_delta} AS {t1} WHERE {predicate}
) AS s
