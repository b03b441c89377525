-- A re-run node's changes: its query run again over its streams as they are now (their
-- histories and this cycle's rows), against the answer it holds. A row the new answer
-- has k more copies of is k times +1, one it has k fewer of is k times -1 (EXCEPT ALL
-- counts copies, NULLs equal). {bounded}: argus.nodes.base.bounded.
INSERT INTO {delta} ({columns}, argus_hash, {sign})
WITH argus_rows AS (SELECT * FROM ({query}) AS {q} ({columns})){bounded}
, argus_new AS MATERIALIZED (SELECT * FROM {read} AS argus_r)
SELECT {d_columns}, {d_hash}, 1
  FROM (SELECT {columns} FROM argus_new EXCEPT ALL SELECT {columns} FROM {hist}) AS d
UNION ALL
SELECT {d_columns}, {d_hash}, -1
  FROM (SELECT {columns} FROM {hist} EXCEPT ALL SELECT {columns} FROM argus_new) AS d
