sum(CASE WHEN x.{old} = 0 AND x.{old} + x.{dn} > 0 THEN 1
         WHEN x.{old} > 0 AND x.{old} + x.{dn} <= 0 THEN -1 ELSE 0 END) AS {c}
