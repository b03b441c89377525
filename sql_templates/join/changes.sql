-- A deferred join's changes (a virtual join no consumer reads each cycle: its query's
-- changes view reads this view): computed when read, from its parents' deltas and
-- histories, which outlive the cycle: ΔA⋈B ⊎ (A⋈ΔB ∖ ΔA⋈ΔB) over the maintained
-- histories (B = B_old ⊎ ΔB, insert-only) are the Rete rule's ΔA⋈B_old ⊎ A_old⋈ΔB ⊎
-- ΔA⋈ΔB. EXCEPT ALL takes away one copy per copy, NULLs equal, as the bags need. The
-- sign goes first, so that columns the node gains (projection enrichment) go at the end.
CREATE OR REPLACE VIEW {view} AS
SELECT 1::smallint AS {sign}, {named_exprs}
  FROM {left_delta} AS {t1} JOIN {right} AS {t2} ON {condition}
UNION ALL (
SELECT 1::smallint, {named_exprs} FROM {left} AS {t1} JOIN {right_delta} AS {t2} ON {condition}
EXCEPT ALL
SELECT 1::smallint, {named_exprs}
  FROM {left_delta} AS {t1} JOIN {right_delta} AS {t2} ON {condition})
