-- Incremental aggregation. d: the delta's bookkeeping per group (signed sums, counts,
-- extremes of the inserted rows); o: the groups' current rows; n: old + delta, with
-- MIN/MAX re-read for groups that lost rows (mm) and COUNT(DISTINCT) from its
-- per-value counts (cd); f: the new rows with their final values. Emits -1 for each
-- changed old row and +1 for its new value; a group whose count reaches 0 vanishes.
INSERT INTO {delta} ({stored}, argus_hash, {sign})
WITH d AS (
    SELECT {group_named}{comma}sum({t1}.{sign}) AS argus_n,
           count(*) FILTER (WHERE {t1}.{sign} < 0) AS argus_r{book_delta}
      FROM {parent_delta} AS {t1}{group_by}
), dh AS (
    SELECT d.*, {d_hash} AS argus_hash FROM d
), o AS (
    SELECT h.* FROM {hist} AS h JOIN dh ON {match_h}
){ctes}, n AS (
    SELECT {dh_groups}{comma}dh.argus_hash, coalesce(o.argus_n, 0) + dh.argus_n AS argus_n{book_merge}
      FROM dh LEFT JOIN o ON {match_o}{joins}
), f AS (
    SELECT {f_columns}, n.argus_hash FROM n WHERE {keep}
)
SELECT {o_stored}, o.argus_hash, -1 FROM o
 WHERE NOT EXISTS (SELECT 1 FROM f WHERE f.argus_hash = o.argus_hash
                                     AND CASE WHEN ROW({f_stored}) IS NOT DISTINCT FROM ROW({o_stored}) THEN true ELSE false END)
UNION ALL
SELECT {f_stored}, f.argus_hash, 1 FROM f
 WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.argus_hash = f.argus_hash
                                     AND CASE WHEN ROW({o_stored}) IS NOT DISTINCT FROM ROW({f_stored}) THEN true ELSE false END)
