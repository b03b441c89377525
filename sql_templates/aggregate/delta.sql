-- Incremental aggregation. d: the delta's bookkeeping per group (signed sums, counts,
-- extremes of the inserted rows); o: the groups' current rows; n: old + delta, with
-- MIN/MAX re-read for groups that lost rows (mm) and COUNT(DISTINCT) from its
-- per-value counts (cd); f: the new rows with their final values. Emits -1 for each
-- changed old row and +1 for its new value (a group whose values netted to no change
-- emits neither: {o_changed} and {f_changed}, unless the parent only grows, when every
-- group in the delta gained rows); a group whose count reaches 0 vanishes. Both rows
-- carry the old row's ctid (argus_ctid), so that the flush finds it without the index.
INSERT INTO {delta} ({stored}, argus_hash, argus_ctid, {sign})
WITH d AS (
    SELECT {group_named}{comma}sum({t1}.{sign}) AS argus_n,
           count(*) FILTER (WHERE {t1}.{sign} < 0) AS argus_r{book_delta}
      FROM {parent_delta} AS {t1}{group_by}
), dh AS (
    SELECT d.*, {d_hash} AS argus_hash FROM d
), {old_rows}{ctes}, n AS (
    SELECT {dh_groups}{comma}dh.argus_hash, o.argus_ctid,
           coalesce(o.argus_n, 0) + dh.argus_n AS argus_n{book_merge}
      FROM dh LEFT JOIN o ON {match_o}{joins}
), f AS (
    SELECT {f_columns}, n.argus_hash, n.argus_ctid FROM n WHERE {keep}
)
SELECT {o_stored}, o.argus_hash, o.argus_ctid, -1 FROM o{o_changed}
UNION ALL
SELECT {f_stored}, f.argus_hash, f.argus_ctid, 1 FROM f{f_changed}
