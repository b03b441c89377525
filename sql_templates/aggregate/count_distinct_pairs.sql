-- The delta's (group, value) pairs of a COUNT(DISTINCT x) family, each with its signed
-- count of rows per member (dn) and the count the node's aux table holds (old), and
-- where it holds it (argus_actid; NULL: a value new to its group).
SELECT dd.*{olds}, a.ctid AS argus_actid
  FROM ({values}) AS dd
  LEFT JOIN {aux} AS a ON a.argus_hash = dd.argus_hash
       AND CASE WHEN ROW({a_key}) IS NOT DISTINCT FROM ROW({dd_key}) THEN true ELSE false END
