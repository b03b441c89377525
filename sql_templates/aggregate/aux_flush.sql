-- Apply the delta's (group, value) counts to the aux table; drop values no member
-- counts any more.
MERGE INTO {aux} AS a
USING ({values}) AS d
   ON a.argus_hash = d.argus_hash AND CASE WHEN ROW({a_key}) IS NOT DISTINCT FROM ROW({d_key}) THEN true ELSE false END
 WHEN MATCHED AND {vanish} THEN DELETE
 WHEN MATCHED AND ({moves}) THEN UPDATE SET {updates}
 WHEN NOT MATCHED AND ({moves}) THEN
      INSERT ({key}, argus_hash{counts}) VALUES ({d_key}, d.argus_hash{d_counts})
