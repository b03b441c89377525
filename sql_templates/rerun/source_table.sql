-- A table as a re-run node reads it in a cycle: its history less the rows this cycle
-- changed or deleted, and the rows it has now (argus.tables).
((SELECT {columns} FROM {hist}
  EXCEPT ALL SELECT {columns} FROM {delta} AS argus_gone WHERE {sign} < 0)
 UNION ALL SELECT {columns} FROM {delta} AS argus_claimed WHERE {sign} > 0)
