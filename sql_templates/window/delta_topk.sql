-- A Top-K node over a parent that only grows (window/delta's special case): its new
-- top rows are ranked among its old ones and the parent's new rows, and each old row
-- carries its ctid, its rank and its hash through the ranking, so the changes are found
-- in one pass over the ranked rows, without comparing whole rows or joining them back:
-- a new row, or an old one ranked anew, is inserted; an old row no longer kept, or kept
-- at another rank, is retracted by its ctid, with the hash its history holds. Its other
-- columns are its parent's (or functions of them): a rank kept is a row unchanged, and
-- an old row's columns are computed again as they were.
INSERT INTO {delta} ({columns}, argus_hash, {sign}, argus_ctid)
WITH argus_keys AS MATERIALIZED (
    SELECT DISTINCT {key_exprs} FROM {parent_delta} AS {t1}
), argus_old AS MATERIALIZED (
    {touched_here}
), argus_new AS MATERIALIZED (
    SELECT * FROM (SELECT {named}, {t1}.argus_ctid, {t1}.argus_rank, {t1}.argus_ohash FROM (
        {parent_touched}
        UNION ALL
        SELECT {p_columns}, NULL::tid, NULL::bigint, NULL::bigint FROM {parent_delta} AS {t1}
         WHERE {t1}.{sign} > 0
    ) AS {t1}) AS argus_w WHERE {kept} OR argus_w.argus_ctid IS NOT NULL
)
SELECT {n_columns}, {n_hash}, 1::smallint, NULL::tid FROM argus_new AS n
 WHERE {n_kept} AND n.argus_rank IS DISTINCT FROM n.{rank}
UNION ALL
SELECT {o_columns}, n.argus_ohash, -1::smallint, n.argus_ctid FROM argus_new AS n
 WHERE n.argus_ctid IS NOT NULL AND NOT ({n_kept} AND n.argus_rank = n.{rank})
