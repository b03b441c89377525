-- An inner join that keeps no table (virtual: its answer is large next to its inputs):
-- its history is the join of its parents' histories, read through their indexes when a
-- consumer probes it or reads the answer; a cycle still computes its delta (term.sql).
-- Columns the node gains (projection enrichment) go at the view's end.
CREATE OR REPLACE VIEW {view} AS
SELECT {named_exprs} FROM {left} AS {t1} JOIN {right} AS {t2} ON {condition}
