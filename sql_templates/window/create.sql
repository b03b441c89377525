-- A window node's history: its rows (one per copy, each with its hash: it is on the
-- signed path), the partition keys first, so that a cycle finds a partition's rows.
CREATE TABLE {hist} AS SELECT {named} FROM {parent} AS {t1}{group_by} WITH NO DATA
