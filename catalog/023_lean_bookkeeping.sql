-- The cycle's own bookkeeping, leaner (issue 25).
--
-- What each query's answer gained and lost in a cycle is one jsonb value of the run,
-- {query: [inserted, retracted]} for the queries whose answer changed, not a row per
-- query (646 index insertions were 3 ms of a 100-row cycle at 1,000 queries).
ALTER TABLE argus_catalog.runs ADD COLUMN queries jsonb;
UPDATE argus_catalog.runs r
   SET queries = (SELECT jsonb_object_agg(q.query, jsonb_build_array(q.inserted, q.retracted))
                    FROM argus_catalog.run_queries q WHERE q.run_id = r.run_id);
DROP VIEW IF EXISTS argus.runs;  -- read run_queries; views.sql creates it again
DROP TABLE argus_catalog.run_queries;

-- The queries whose answer changed are found from the output nodes that changed.
CREATE INDEX queries_output_node ON argus_catalog.queries (output_node);

-- The program takes the deltas to clear and the settings as arguments and says how many
-- nodes ran; the old signature goes (argus.assemble_program creates the new one).
DROP FUNCTION IF EXISTS argus_net.cycle_program(bigint);
UPDATE argus_catalog.settings SET program_stale = true;
