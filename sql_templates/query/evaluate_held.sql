-- Expressions over the rows a relation holds (as {t1}), to one row past a bound: its
-- rows, and each row counted whole, so that PostgreSQL computes every expression (a
-- count(*) alone would leave the unused ones out; of argus_row.*, which no output column
-- can be). A row one fails on fails this.
SELECT count(*), count(argus_row.*)
  FROM (SELECT {exprs} FROM {relation} AS {t1} WHERE {predicate} LIMIT {limit}) AS argus_row
