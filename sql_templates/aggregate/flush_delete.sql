-- A group that vanished: retracted, and no new row for its key.
DELETE FROM {hist} AS h USING {delta} AS d
 WHERE d.{sign} < 0 AND {match}
   AND NOT EXISTS (SELECT 1 FROM {delta} AS p WHERE p.{sign} > 0 AND {match_p})
