INSERT INTO {hist} ({columns}{hash_column})
SELECT {s_columns}{hash_expr} FROM (
    SELECT {left_cast} FROM {left} AS {t1} UNION ALL SELECT {right_cast} FROM {right} AS {t1}
) AS s
