-- … and an inserted row is inserted once (after the retractions: a group's old and new
-- row may be equal).
INSERT INTO {hist} ({columns}, argus_hash)
SELECT {columns}, argus_hash FROM {delta} WHERE {sign} > 0
