-- A deferred join's changes (join/changes.sql) when every column's equality is
-- identity (integers, dates, timestamps, booleans, uuid, bytea: two equal values
-- print the same): the difference is EXCEPT ALL on the values themselves, two to three
-- times cheaper to read than numbering copies by their text.
CREATE OR REPLACE VIEW {view} AS
SELECT 1::smallint AS {sign}, {named_exprs}
  FROM {left_delta} AS {t1} JOIN {right} AS {t2} ON {condition}
UNION ALL (
SELECT 1::smallint, {named_exprs} FROM {left} AS {t1} JOIN {right_delta} AS {t2} ON {condition}
EXCEPT ALL
SELECT 1::smallint, {named_exprs}
  FROM {left_delta} AS {t1} JOIN {right_delta} AS {t2} ON {condition})
