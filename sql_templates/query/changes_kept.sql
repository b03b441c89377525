-- A query's changes after a migration (argus.adapt) replaced the nodes that held the
-- last cycle's changes: those changes, kept in a table, until the next cycle; the new
-- nodes' changes after it.
SELECT * FROM {kept}
 WHERE NOT EXISTS (SELECT FROM argus_catalog.runs WHERE run_id > {after} AND status = 'ok')
UNION ALL
{changes}
