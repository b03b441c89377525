-- A new selection node starts from its parent's whole history.
INSERT INTO {hist} ({columns})
SELECT {exprs} FROM {parent_hist} AS {t1} WHERE {predicate}
