-- A value enters the output when its multiplicity rises from 0, and leaves when it
-- falls to 0.
INSERT INTO {delta} ({columns}, argus_count, argus_hash, {sign})
SELECT {x_columns}, 1, x.argus_hash, CASE WHEN x.old = 0 THEN 1 ELSE -1 END
  FROM (SELECT d.*, coalesce(h.argus_count, 0) AS old
          FROM (SELECT {named}, {hash} AS argus_hash, sum({t1}.{sign}) AS dn
                  FROM {parent_delta} AS {t1} GROUP BY {t1_columns}) AS d
          LEFT JOIN {hist} AS h ON h.argus_hash = d.argus_hash
               AND CASE WHEN ROW({h_columns}) IS NOT DISTINCT FROM ROW({d_columns}) THEN true ELSE false END) AS x
 WHERE (x.old > 0) <> (x.old + x.dn > 0)
