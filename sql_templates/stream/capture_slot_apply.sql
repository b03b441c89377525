-- A tracked table's changes read from the capture slot (argus.read_capture), those
-- after the change $3 and before $4 in the slot's order, into its inbox in that order:
-- inserted rows as 'i', updated rows as 'u' after a 'd' of the old key where the
-- update changed the key, deleted rows' keys as 'd'. $2: the position of `track`, the
-- source's rows before it are in the backfill.
INSERT INTO {inbox} ({columns}, argus_op)
SELECT {values}, x.op
  FROM argus_catalog.captured c,
       LATERAL (VALUES (1, c.old, 'd'::"char"),
                       (2, c.new, CASE c.op WHEN 'I' THEN 'i' ELSE 'u' END::"char"))
               AS x(k, tuple, op)
 WHERE c.relid = $1 AND c.lsn >= $2 AND c.ord > $3 AND c.ord < $4
   AND CASE x.k WHEN 1 THEN c.op = 'D' OR (c.op = 'U' AND c.old IS NOT NULL
                                           AND ({old_key}) IS DISTINCT FROM ({new_key}))
                ELSE c.op IN ('I', 'U') END
 ORDER BY c.ord, x.k
