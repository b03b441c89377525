-- A row that changed (an aggregate's group, a table's key): overwritten in place, found
-- by the ctid its delta row carries (a HOT update when no indexed column's bytes
-- change); the rows to change are read by a TID scan of the delta's ctids ({updated},
-- nodes.base.tid_scan). On Citus, a sharded aggregate's row is found by its group
-- instead (Citus plans no modification by ctid joined with the coordinator's delta),
-- and the distribution column is not set.
UPDATE {hist} AS h SET ({stored}) = ROW({d_stored})
  FROM {delta} AS d
 WHERE d.{sign} > 0 AND {found}{updated}
