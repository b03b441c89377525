-- argus_changes.<query>: what the last cycle changed, one row per inserted (+1) or
-- retracted (-1) copy.
CREATE VIEW {view} AS SELECT {exprs}, {t1}.{sign} FROM {delta} AS {t1}
