-- A Top-K node over a parent that only grows (window/delta's special case): its new
-- top rows are ranked among its old ones and the parent's new rows, and each old row
-- carries its ctid and its old rank through the ranking, so the changes are found
-- without comparing whole rows: a new row, or an old one ranked anew, is inserted; an
-- old row no longer kept, or kept at another rank, is retracted by its ctid. Its other
-- columns are its parent's (or functions of them): a rank kept is a row unchanged.
INSERT INTO {delta} ({columns}, argus_hash, {sign}, argus_ctid)
WITH argus_keys AS MATERIALIZED (
    SELECT DISTINCT {key_exprs} FROM {parent_delta} AS {t1}
), argus_old AS MATERIALIZED (
    {touched_here}
), argus_new AS MATERIALIZED (
    SELECT * FROM (SELECT {named}, {t1}.argus_ctid, {t1}.argus_rank FROM (
        {parent_touched}
        UNION ALL
        SELECT {p_columns}, NULL::tid, NULL::bigint FROM {parent_delta} AS {t1}
         WHERE {t1}.{sign} > 0
    ) AS {t1}) AS argus_w WHERE {kept}
)
SELECT {n_columns}, {n_hash}, 1::smallint, NULL::tid FROM argus_new AS n
 WHERE n.argus_rank IS DISTINCT FROM n.{rank}
UNION ALL
SELECT {o_columns}, {o_hash}, -1::smallint, o.argus_ctid FROM argus_old AS o
 WHERE NOT EXISTS (SELECT FROM argus_new AS n
                    WHERE n.argus_ctid = o.argus_ctid AND n.argus_rank = n.{rank})
