-- One term of the Rete rule Δ(A⋈B) = ΔA⋈B_old ∪ A_old⋈ΔB ∪ ΔA⋈ΔB: the sign of a
-- result row is the product of its inputs' signs (history rows count as +1).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs}, {sign_expr} AS {sign}
      FROM {left} AS {t1} JOIN {right} AS {t2} ON {condition}
) AS s
