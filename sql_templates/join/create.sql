-- A join node's history: the columns it keeps from both sides, typed by PostgreSQL.
CREATE TABLE {hist} AS SELECT {named_exprs} FROM {left} AS {t1}, {right} AS {t2} WITH NO DATA
