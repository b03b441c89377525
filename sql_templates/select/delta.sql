-- Selection is evaluated on the parent's delta only; signs pass through unchanged.
INSERT INTO {delta} ({columns}, {sign})
SELECT {exprs}, {t1}.{sign} FROM {parent_delta} AS {t1} WHERE {predicate}
