-- A new inner join starts from the join of its parents' histories. {limit}: past how
-- many rows it is to be a view instead (network.builder, conditional materialization),
-- or nothing.
INSERT INTO {hist} ({columns}{hash_column})
SELECT {s_columns}{hash_expr} FROM (
    SELECT {named_exprs} FROM {left} AS {t1} JOIN {right} AS {t2} ON {condition}{limit}
) AS s
