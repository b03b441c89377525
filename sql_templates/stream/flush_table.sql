-- A table's history takes the cycle's changes by key, in one pass: per key, its new row
-- (+1) if it has one, else the row it had (-1). A key with a new row that the history
-- has is updated in place (HOT when the key's bytes stay the same), one without is
-- inserted, and one that only lost its row is deleted.
MERGE INTO {hist} AS h
USING (SELECT DISTINCT ON ({key}) {columns}, {sign} FROM {delta} ORDER BY {key}, {sign} DESC) AS d
   ON {join}
 WHEN MATCHED AND d.{sign} < 0 THEN DELETE{update}
 WHEN NOT MATCHED AND d.{sign} > 0 THEN INSERT ({columns}) VALUES ({d_columns})
