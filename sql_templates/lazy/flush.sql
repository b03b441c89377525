-- A lazily built join appends its new rows of the complete keys only: the rows of a key
-- not complete yet are read from its parents' histories when the key is completed.
INSERT INTO {hist} ({columns})
SELECT {d_columns} FROM {delta} AS d WHERE EXISTS (SELECT FROM {done} AS k WHERE {match})
