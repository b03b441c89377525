-- A query's own output expressions (computed in its views, over a node other queries
-- may share), evaluated over the rows its top node gained this cycle, so that a row
-- they fail on isolates this query in the cycle (argus.run_cycle), not its readers.
-- The whole-row count makes PostgreSQL compute every expression: of argus_row.*, which
-- no output column can be (count(c) counted a column named c, and computed no other).
SELECT count(argus_row.*)
  FROM (SELECT {exprs} FROM {delta} AS {t1} WHERE {t1}.{sign} > 0) AS argus_row
