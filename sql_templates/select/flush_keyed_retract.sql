-- Signed path of a selection over a keyed node (an aggregate's groups, keys passed
-- through): its rows are distinct, and a retracted row is one the history holds, so a
-- retraction deletes the row it names: no netting, no counting of copies.
DELETE FROM {hist} AS h USING {delta} AS d
 WHERE d.{sign} < 0 AND h.argus_hash = d.argus_hash
   AND CASE WHEN ROW({h_columns}) IS NOT DISTINCT FROM ROW({d_columns}) THEN true ELSE false END
