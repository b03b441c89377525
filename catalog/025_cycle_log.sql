-- The cycle's record, cheaper again (issue 25).
--
-- Each node's choice between applying its changes and rebuilding is kept in the node's
-- run_nodes row, which the program writes in one statement with the rest of the row,
-- not in a row of its own in run_maintenance (a second table and index per node and
-- cycle; rebuilt is NULL where nothing was chosen).
ALTER TABLE argus_catalog.run_nodes
    ADD COLUMN changes      bigint,            -- rows applying handles: its and its parents' deltas
    ADD COLUMN rebuild_rows bigint,            -- rows rebuilding reads and writes
    ADD COLUMN apply_ms     double precision,  -- predicted (NULL: nothing learned yet)
    ADD COLUMN rebuild_ms   double precision,
    ADD COLUMN rebuilt      boolean;           -- NULL: not chosen (not signed, or no changes)
UPDATE argus_catalog.run_nodes r
   SET changes = m.changes, rebuild_rows = m.rebuild_rows, apply_ms = m.apply_ms,
       rebuild_ms = m.rebuild_ms, rebuilt = m.rebuilt
  FROM argus_catalog.run_maintenance m
 WHERE m.run_id = r.run_id AND m.node_id = r.node_id;
DROP VIEW IF EXISTS argus.nodes;  -- read run_maintenance; views.sql creates it again
DROP TABLE argus_catalog.run_maintenance;

-- The queries whose output a cycle checks, found without reading the others' rows.
CREATE INDEX queries_output_check ON argus_catalog.queries (output_node)
 WHERE output_check IS NOT NULL;

-- The program chooses itself (its frame, sql_templates/program/cycle_program.sql) and
-- says which queries each output node answers (its new columns).
DROP FUNCTION IF EXISTS argus.choose_maintenance(bigint, bigint[], bigint[], bigint[]);
DROP FUNCTION IF EXISTS argus_net.cycle_program(bigint, jsonb, argus_catalog.settings);
UPDATE argus_catalog.settings SET program_stale = true;

-- What each query's answer gained and lost in a run, as json: building it as jsonb
-- (sorting and de-duplicating its keys) cost 0.9 ms of a cycle at 600 queries changed.
DROP VIEW IF EXISTS argus.runs;  -- views.sql creates it again
ALTER TABLE argus_catalog.runs ALTER COLUMN queries TYPE json USING queries::json;

-- A node's statements run with their plans kept for the session when its deltas are
-- this small together (planning them at every cycle was a fifth to a third of a
-- 100-row cycle), and are planned for their deltas' sizes at every cycle otherwise.
-- Kept plans are made anew in every session after a cycle that saw a history double or
-- halve since they were made (plans_reset_run; node_stats.planned_rows, NULL: set by
-- the next cycle that changes it), so that none outlives the sizes it was made for.
ALTER TABLE argus_catalog.settings ADD COLUMN plan_kept_rows bigint DEFAULT 1000,
                                   ADD COLUMN plans_reset_run bigint NOT NULL DEFAULT 0;
ALTER TABLE argus_catalog.node_stats ADD COLUMN planned_rows bigint;
