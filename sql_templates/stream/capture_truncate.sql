-- A TRUNCATE of a tracked table: a 'd' of every key argus holds or has waiting.
INSERT INTO {inbox} ({key}, argus_op)
SELECT {key}, 'd' FROM (SELECT {key} FROM {history} UNION SELECT {key} FROM {inbox}) AS k
