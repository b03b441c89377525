-- A group that vanished: retracted, and no new row for it (found by the ctid of the row
-- its retraction names, which no update of this flush moved).
DELETE FROM {hist} AS h USING {delta} AS d
 WHERE d.{sign} < 0 AND h.ctid = d.argus_ctid
   AND NOT EXISTS (SELECT 1 FROM {delta} AS p WHERE p.{sign} > 0 AND p.argus_ctid = d.argus_ctid)
