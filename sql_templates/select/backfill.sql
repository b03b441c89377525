-- A new selection node starts from its parent's whole history.
INSERT INTO {hist} ({columns}{hash_column})
SELECT {s_columns}{hash_expr} FROM (
    SELECT {named_exprs} FROM {parent} AS {t1} WHERE {predicate}
) AS s
