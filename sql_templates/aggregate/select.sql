-- An aggregate node's rows computed from scratch over its parent's history: used to
-- create the history table (WITH NO DATA) and to backfill it. The same bookkeeping
-- and final expressions as the incremental path, with every input row counted +1.
SELECT {f_columns}, {n_hash} AS argus_hash FROM (
    SELECT {group_named}{comma}count(*) AS argus_n{book_backfill}
      FROM {parent} AS {t1}{group_by}
) AS n WHERE {keep}
