-- A stream as a re-run node reads it in a cycle: its history and the rows this cycle
-- claimed (in its delta table, or in the inbox after a locked claim).
(SELECT {columns} FROM {hist} UNION ALL SELECT {columns} FROM {delta} AS argus_claimed)
