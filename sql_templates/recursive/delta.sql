-- Semi-naive evaluation of a cycle's new rows: the seed is what the new base rows are,
-- and what the step derives from the rows held with one stream read as its new rows
-- (once per stream it reads; the others as they are now); each round then applies the
-- step to the last round's rows only. A row held already, or derived already, is not
-- derived again (the prune, and UNION), so the rounds end, and what they leave is the
-- relation's growth exactly. The relation only grows: its inputs are insert-only. (The
-- prune's OFFSET 0 keeps it a probe of the held rows' hash index for each row, not a
-- hash of every row held.) {bounded}: argus.nodes.base.bounded.
INSERT INTO {delta} ({columns}, {sign})
WITH RECURSIVE argus_d ({columns}) AS (
    SELECT {columns} FROM (
        SELECT {base_columns} FROM {base_delta} AS {t1}
        UNION
        {seeds}
    ) AS argus_seed ({columns})
    WHERE {seed_prune}
    UNION
    {step}
){bounded}
SELECT {columns}, 1 FROM {read}
