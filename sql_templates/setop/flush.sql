-- Apply the input deltas to the per-value counts; values absent from both inputs leave.
MERGE INTO {aux} AS a
USING ({counts}) AS c
   ON a.argus_hash = c.argus_hash AND CASE WHEN ROW({a_columns}) IS NOT DISTINCT FROM ROW({c_columns}) THEN true ELSE false END
 WHEN MATCHED AND a.argus_ca + c.da = 0 AND a.argus_cb + c.db = 0 THEN DELETE
 WHEN MATCHED THEN UPDATE SET argus_ca = a.argus_ca + c.da, argus_cb = a.argus_cb + c.db
 WHEN NOT MATCHED AND (c.da <> 0 OR c.db <> 0) THEN
      INSERT ({columns}, argus_hash, argus_ca, argus_cb)
      VALUES ({c_columns}, c.argus_hash, c.da, c.db)
