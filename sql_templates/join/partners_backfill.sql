-- Semi/anti/left joins at registration: left rows with (semi) or without (anti, and the
-- NULL-padded rows of a left join) a partner in the right history.
INSERT INTO {hist} ({columns}{hash_column})
SELECT {s_columns}{hash_expr} FROM (
    SELECT {named_exprs} FROM {left} AS {t1}
     WHERE {negate} EXISTS (SELECT 1 FROM {right} AS {t2} WHERE {condition})
) AS s
