-- A set operation's history (its output rows) and its aux table of per-value counts
-- in each input; column types are resolved by PostgreSQL as for the SQL operator.
CREATE TABLE {hist} AS SELECT {left_named} FROM {left} AS {t1}
                       UNION ALL SELECT {right_named} FROM {right} AS {t2} WITH NO DATA;
CREATE TABLE {aux} (LIKE {hist});
ALTER TABLE {aux} ADD COLUMN argus_hash bigint NOT NULL,
                  ADD COLUMN argus_ca bigint NOT NULL, ADD COLUMN argus_cb bigint NOT NULL
