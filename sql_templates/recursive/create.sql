-- A recursive relation's history: one row per row of the relation (a set), typed as its
-- non-recursive branches' columns, with the index on each row's hash that tells the
-- rows a cycle derives from those it holds.
CREATE TABLE {hist} AS SELECT {base_columns} FROM {base} AS {t1} WITH NO DATA;
CREATE INDEX ON {hist} (hash_record_extended(ROW({columns}), 0))
