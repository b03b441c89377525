-- A deferred join's changes (a virtual join no consumer reads each cycle: its query's
-- changes view reads this view): computed when read, from its parents' deltas and
-- histories, which outlive the cycle: ΔA⋈B ⊎ (A⋈ΔB ∖ ΔA⋈ΔB) over the maintained
-- histories (B = B_old ⊎ ΔB, insert-only) are the Rete rule's ΔA⋈B_old ⊎ A_old⋈ΔB ⊎
-- ΔA⋈ΔB. The difference takes away, per value, as many copies as ΔA⋈ΔB has, by the
-- values' text (not the type's equality: 1.0 and 1.00 are different copies to take, and
-- json has none), keeping the rows as they are. The sign goes first, so that columns
-- the node gains (projection enrichment) go at the end.
CREATE OR REPLACE VIEW {view} AS
SELECT 1::smallint AS {sign}, {named_exprs}
  FROM {left_delta} AS {t1} JOIN {right} AS {t2} ON {condition}
UNION ALL
SELECT 1::smallint, {s_columns} FROM (
    SELECT {named_exprs}, row_number() OVER (PARTITION BY ARRAY[{texts}]) AS argus_copy,
           ARRAY[{texts}] AS argus_value
      FROM {left} AS {t1} JOIN {right_delta} AS {t2} ON {condition}
) AS s LEFT JOIN (
    SELECT ARRAY[{texts}] AS argus_value, count(*) AS argus_copies
      FROM {left_delta} AS {t1} JOIN {right_delta} AS {t2} ON {condition}
     GROUP BY 1
) AS d ON d.argus_value = s.argus_value
 WHERE s.argus_copy > coalesce(d.argus_copies, 0)
