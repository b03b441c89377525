-- UNION ALL: one input's delta, its columns matched to the node's by position.
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {cast}, {t1}.{sign} FROM {source} AS {t1}
) AS s
