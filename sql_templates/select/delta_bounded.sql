-- A selection whose set-returning function expands rows (frontend.lateral), evaluated
-- on the parent's delta as select/delta is, giving at most its bound of rows in a
-- cycle (argus.nodes.base.bounded: past it the statement fails, isolating its queries).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
WITH argus_rows AS (
    SELECT {named_exprs}, {t1}.{sign} FROM {parent_delta} AS {t1} WHERE {predicate}
){bounded}
SELECT {s_columns}{hash_expr}, s.{sign} FROM {read} AS s
