-- Apply the delta's (group, value) counts to the aux table; drop values that vanish.
MERGE INTO {aux} AS a
USING ({values}) AS d
   ON a.argus_hash = d.argus_hash AND CASE WHEN ROW({a_key}) IS NOT DISTINCT FROM ROW({d_key}) THEN true ELSE false END
 WHEN MATCHED AND a.argus_count + d.dn = 0 THEN DELETE
 WHEN MATCHED THEN UPDATE SET argus_count = a.argus_count + d.dn
 WHEN NOT MATCHED AND d.dn <> 0 THEN
      INSERT ({key}, argus_hash, argus_count) VALUES ({d_key}, d.argus_hash, d.dn)
