-- New (or retracted) left rows, judged against the right side's new state: their
-- partners in its history plus the signed partners in its delta. Emitted with their
-- own sign when that count is above zero (semi) or zero (anti, left-join padding).
-- Counts are grouped by each delta row's number, so each copy of a duplicated row is
-- judged on its own (a stream's delta is a view: it has no ctid).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    WITH l AS MATERIALIZED (
        SELECT row_number() OVER () AS argus_tid, {t1}.* FROM {left_delta} AS {t1}
    ), o AS (
        SELECT {t1}.argus_tid, count(*) AS n FROM l AS {t1} JOIN {right} AS {t2} ON {condition}
         GROUP BY 1
    ), d AS (
        SELECT {t1}.argus_tid, sum({t2}.{sign}) AS n
          FROM l AS {t1} JOIN {right_delta} AS {t2} ON {condition} GROUP BY 1
    )
    SELECT {named_exprs}, {t1}.{sign}
      FROM l AS {t1}
      LEFT JOIN o ON o.argus_tid = {t1}.argus_tid
      LEFT JOIN d ON d.argus_tid = {t1}.argus_tid
     WHERE coalesce(o.n, 0) + coalesce(d.n, 0) {test}
) AS s
