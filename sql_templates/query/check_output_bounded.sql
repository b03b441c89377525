-- check_output.sql for outputs that expand rows (a set-returning function of the data:
-- `generate_series(1, x)` gives any number): at most one row past the bound is made,
-- and past it the check fails, isolating the query (argus.within_bound).
SELECT argus.within_bound(count(argus_row.*), {bound})
  FROM (SELECT {exprs} FROM {delta} AS {t1} WHERE {t1}.{sign} > 0 LIMIT {limit}) AS argus_row
