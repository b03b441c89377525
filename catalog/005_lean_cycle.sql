-- Less work per cycle.
--
-- The per-cycle logs are written for every node and query of every cycle, hundreds of
-- rows: without foreign keys to argus_catalog.runs, whose checks cost a lookup per
-- logged row. Nothing deletes runs; the logs are trimmed by run_id.
ALTER TABLE argus_catalog.run_streams DROP CONSTRAINT IF EXISTS run_streams_run_id_fkey;
ALTER TABLE argus_catalog.run_nodes DROP CONSTRAINT IF EXISTS run_nodes_run_id_fkey;
ALTER TABLE argus_catalog.run_queries DROP CONSTRAINT IF EXISTS run_queries_run_id_fkey;
ALTER TABLE argus_catalog.run_maintenance DROP CONSTRAINT IF EXISTS run_maintenance_run_id_fkey;
