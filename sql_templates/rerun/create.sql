-- A re-run node's history: its query's answer, one row per copy, each with its hash
-- (it is on the signed path: a cycle retracts the rows the new answer no longer has).
CREATE TABLE {hist} AS SELECT * FROM ({query}) AS {q} ({columns}) WITH NO DATA
