-- A selection node's history: the parent's columns it keeps, typed by PostgreSQL.
CREATE TABLE {hist} AS SELECT {named_exprs} FROM {parent_hist} AS {t1} WITH NO DATA
