-- A table's key that had no row and has one.
INSERT INTO {hist} ({columns})
SELECT {columns} FROM {delta} WHERE {sign} > 0 AND argus_ctid IS NULL
