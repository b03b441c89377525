INSERT INTO {hist} ({columns}, argus_hash)
SELECT {q_columns}, {hash} FROM ({query}) AS {q} ({columns})
