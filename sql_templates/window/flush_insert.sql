-- A window node's inserted rows: its delta holds no value both inserted and
-- retracted (window/delta), so they are appended as they are.
INSERT INTO {hist} ({columns}, argus_hash)
SELECT {columns}, argus_hash FROM {delta} WHERE {sign} > 0
