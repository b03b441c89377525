-- The keys of a lazily built join that are complete, typed as its columns (a primary
-- key is added: completions insert each key once).
CREATE TABLE {done} AS SELECT {keys} FROM {hist} WITH NO DATA
