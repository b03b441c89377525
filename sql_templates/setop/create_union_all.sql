-- UNION ALL keeps every input row; column types resolved by PostgreSQL as for the SQL.
CREATE TABLE {hist} AS SELECT {left_named} FROM {left} AS {t1}
                       UNION ALL SELECT {right_named} FROM {right} AS {t2} WITH NO DATA
