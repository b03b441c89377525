-- A table as a re-run node reads it in a cycle: its history but the rows whose key this
-- cycle changed or deleted (each key has one row; NOT IN over the key, NOT NULL, is a
-- hashed subplan whatever the delta's statistics say), and the rows it has now
-- (argus.tables).
((SELECT {columns} FROM {hist}
   WHERE ({key}) NOT IN (SELECT {key} FROM {delta} AS argus_d WHERE argus_d.{sign} < 0))
 UNION ALL SELECT {columns} FROM {delta} AS argus_claimed WHERE {sign} > 0)
