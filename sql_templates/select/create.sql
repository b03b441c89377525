-- A selection node's history: the columns it keeps, typed by PostgreSQL.
CREATE TABLE {hist} AS SELECT {named_exprs} FROM {parent} AS {t1} WITH NO DATA
