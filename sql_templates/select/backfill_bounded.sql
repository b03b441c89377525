-- A new expanding selection (select/delta_bounded) from its parent's whole history, at
-- most its bound of rows.
INSERT INTO {hist} ({columns}{hash_column})
WITH argus_rows AS (
    SELECT {named_exprs} FROM {parent} AS {t1} WHERE {predicate}
){bounded}
SELECT {s_columns}{hash_expr} FROM {read} AS s
