-- A lazily built join made whole: the rows of every key not complete yet (and of NULL
-- keys), from the join of its parents' histories.
INSERT INTO {hist} ({columns})
SELECT {f_columns} FROM {full} AS f WHERE NOT EXISTS (SELECT FROM {done} AS k WHERE {match})
