INSERT INTO {hist} ({columns}, argus_hash)
WITH argus_rows AS (SELECT * FROM ({query}) AS {q} ({columns})){bounded}
SELECT {q_columns}, {hash} FROM {read} AS {q}
