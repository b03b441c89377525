-- A table's key that had a row and has another: its row, found by the ctid the claim
-- read it at (stream/claim_table), overwritten in place (HOT when no indexed column's
-- bytes change). Every column, the key's too: a key equal to the stored one may be
-- written otherwise (1.0 for 1), and the queries got the row as written. The rows to
-- change are read by a TID scan of the delta's ctids.
UPDATE {hist} AS h SET ({columns}) = ROW({d_columns})
  FROM {delta} AS d
 WHERE d.{sign} > 0 AND h.ctid = d.argus_ctid
   AND h.ctid = ANY(ARRAY(SELECT argus_ctid FROM {delta} WHERE {sign} > 0
                            AND argus_ctid IS NOT NULL))
