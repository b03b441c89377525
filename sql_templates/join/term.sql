-- One term of the Rete rule Δ(A⋈B) = ΔA⋈B_old ∪ A_old⋈ΔB ∪ ΔA⋈ΔB: the sign of a
-- result row is the product of its inputs' signs (history rows count as +1). Its FROM
-- joins t1 and t2 on the condition (nodes/join: _terms).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {s_columns}{hash_expr}, s.{sign} FROM (
    SELECT {named_exprs}, {sign_expr} AS {sign}
      FROM {sources}
) AS s
