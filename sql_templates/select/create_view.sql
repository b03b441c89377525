-- A selection over an aggregate's groups (a HAVING, or a narrower one over it) is a view
-- of them, not a copy: a cycle changes a large share of the groups, and keeping a copy
-- of their rows up to date cost more than filtering the groups when the history is
-- read. Its delta is still computed each cycle, from the aggregate's. argus_hash comes
-- first, so that a column the view gains (projection enrichment) goes at its end.
CREATE OR REPLACE VIEW {hist} AS
SELECT {hash} AS argus_hash, {named_exprs} FROM {parent} AS {t1} WHERE {predicate}
