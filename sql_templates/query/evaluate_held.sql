-- Expressions over the rows a relation holds (as {t1}), to one row past a bound: its
-- rows, and each row counted whole, so that PostgreSQL computes every expression (a
-- count(*) alone would leave the unused ones out). A row one fails on fails this.
SELECT count(*), count(c)
  FROM (SELECT {exprs} FROM {relation} AS {t1} WHERE {predicate} LIMIT {limit}) AS c
