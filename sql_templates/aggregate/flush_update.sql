-- A group that changed: overwrite its row, found by its ctid, in place (a HOT update:
-- the hash of its key, the only indexed column, does not change).
UPDATE {hist} AS h SET ({stored}) = ROW({d_stored})
  FROM {delta} AS d
 WHERE d.{sign} > 0 AND h.ctid = d.argus_ctid
