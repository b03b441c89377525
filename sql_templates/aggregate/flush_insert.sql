-- A group that appeared.
INSERT INTO {hist} ({stored}, argus_hash)
SELECT {d_stored}, d.argus_hash FROM {delta} AS d
 WHERE d.{sign} > 0 AND NOT EXISTS (SELECT 1 FROM {hist} AS h WHERE {match})
