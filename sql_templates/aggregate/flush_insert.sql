-- A group that appeared: it had no row.
INSERT INTO {hist} ({stored}, argus_hash)
SELECT {d_stored}, d.argus_hash FROM {delta} AS d
 WHERE d.{sign} > 0 AND d.argus_ctid IS NULL
