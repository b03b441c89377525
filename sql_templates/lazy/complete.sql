-- JISC (Aly et al. 2014): before the other input's new rows probe a lazily built join's
-- history, the keys they probe that are not complete yet are marked complete and their
-- rows read from the join of its parents' histories (its `full` view), in one statement.
-- NULL keys probe nothing (the join is an equality).
WITH completed AS (
    INSERT INTO {done} ({keys})
    SELECT DISTINCT {probe_keys} FROM {probe} AS o WHERE {not_null}
    ON CONFLICT DO NOTHING
    RETURNING {keys}
)
INSERT INTO {hist} ({columns})
SELECT {f_columns} FROM {full} AS f WHERE ({f_keys}) IN (SELECT {keys} FROM completed)
