-- The relation over the histories, as PostgreSQL computes it (the step's prune TRUE).
INSERT INTO {hist} ({columns})
WITH RECURSIVE argus_d ({columns}) AS (
    SELECT {base_columns} FROM {base} AS {t1}
    UNION
    {step}
){bounded}
SELECT {columns} FROM {read}
