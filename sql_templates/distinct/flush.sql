-- Apply the parent's delta to the multiplicities; values at 0 leave the history.
MERGE INTO {hist} AS h
USING (SELECT {named}, {hash} AS argus_hash, sum({t1}.{sign}) AS dn
         FROM {parent_delta} AS {t1} GROUP BY {t1_columns}) AS d
   ON h.argus_hash = d.argus_hash AND CASE WHEN ROW({h_columns}) IS NOT DISTINCT FROM ROW({d_columns}) THEN true ELSE false END
 WHEN MATCHED AND h.argus_count + d.dn = 0 THEN DELETE
 WHEN MATCHED THEN UPDATE SET argus_count = h.argus_count + d.dn
 WHEN NOT MATCHED AND d.dn <> 0 THEN
      INSERT ({columns}, argus_count, argus_hash) VALUES ({d_columns}, d.dn, d.argus_hash)
