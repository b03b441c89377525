-- A selection that keeps no table: its history is a view of its parent's, and its delta
-- a view of the parent's changes. Over an aggregate's groups (a HAVING, or a narrower
-- one over it): a cycle changes a large share of the groups, and keeping copies of their
-- rows cost more than filtering the groups when they are read. Over a stream, when it
-- passes most of the stream's rows (settings.virtual_selectivity): a copy of them costs
-- more than filtering the stream's rows, through its indexes, when they are read. argus_hash (and the
-- sign) come first, so that a column the views gain (projection enrichment) goes at
-- their end.
CREATE OR REPLACE VIEW {view} AS
SELECT {sign}{hash} AS argus_hash, {named_exprs} FROM {parent} AS {t1} WHERE {predicate}
