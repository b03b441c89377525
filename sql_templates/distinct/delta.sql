-- A value enters the output when its multiplicity rises from 0, and leaves when it
-- falls to 0: in the form the history keeps it in (its first copy's), which may not be
-- the form of the copies leaving (numeric 0.000 and 0, float -0 and 0, interval 1 day
-- and 24 hours are one value), so that a consumer holding that form finds it.
INSERT INTO {delta} ({columns}, argus_count, argus_hash, {sign})
SELECT {kept}, 1, d.argus_hash, CASE WHEN h.argus_count > 0 THEN -1 ELSE 1 END
  FROM (SELECT {named}, {hash} AS argus_hash, sum({t1}.{sign}) AS dn
          FROM {parent_delta} AS {t1} GROUP BY {t1_columns}) AS d
  LEFT JOIN {hist} AS h ON h.argus_hash = d.argus_hash
       AND CASE WHEN ROW({h_columns}) IS NOT DISTINCT FROM ROW({d_columns}) THEN true ELSE false END
 WHERE (coalesce(h.argus_count, 0) > 0) <> (coalesce(h.argus_count, 0) + d.dn > 0)
