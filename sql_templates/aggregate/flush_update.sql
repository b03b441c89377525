-- A group that changed: overwrite its row, found by its ctid, in place (a HOT update:
-- the hash of its key, the only indexed column, does not change). On Citus, a sharded
-- history's row is found by its group instead (Citus plans no modification by ctid
-- joined with the coordinator's delta), and the distribution column is not set. The
-- rows to change are read by a TID scan of the delta's ctids ({updated}).
UPDATE {hist} AS h SET ({stored}) = ROW({d_stored})
  FROM {delta} AS d
 WHERE d.{sign} > 0 AND {found}{updated}
