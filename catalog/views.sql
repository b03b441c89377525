-- argus's views for psql users, as they are now: re-created after the numbered
-- migrations whenever this file changes (argus.catalog).

DROP VIEW IF EXISTS argus.streams, argus.queries, argus.nodes, argus.loads, argus.runs,
                    argus.index, argus.quarantine, argus.migrations CASCADE;

CREATE VIEW argus.streams AS
SELECT s.name,
       (SELECT string_agg(format('%I %s%s', c.name, c.type,
                                 CASE WHEN c.not_null THEN ' NOT NULL' ELSE '' END),
                          ', ' ORDER BY c.position)
          FROM argus_catalog.stream_columns c WHERE c.stream_id = s.stream_id) AS columns,
       s.time_column,
       format('%I.%I', 'argus_inbox', s.name) AS inbox,
       format('%I.%I', 'argus_streams', s.name) AS history,
       s.node_id,
       (SELECT count(*) FROM argus_catalog.quarantine r WHERE r.stream = s.name) AS quarantined,
       s.created_at
  FROM argus_catalog.streams s;

-- status 'failed': a node of the query failed in run `failed_run`; the query is
-- isolated (its answer stays as it was) until `argus retry`. culprit: the row its
-- node failed on, when one row could be named.
CREATE VIEW argus.queries AS
SELECT q.name,
       q.sql,
       (SELECT array_agg(c.name ORDER BY c.position)
          FROM argus_catalog.query_columns c WHERE c.query_id = q.query_id) AS columns,
       q.output_node,
       (SELECT array_agg(qn.node_id ORDER BY qn.node_id)
          FROM argus_catalog.query_nodes qn WHERE qn.query_id = q.query_id) AS nodes,
       format('%I.%I', 'argus_results', q.name) AS results,
       format('%I.%I', 'argus_changes', q.name) AS changes,
       q.status,
       q.error,
       q.culprit,
       q.failed_run,
       q.created_at
  FROM argus_catalog.queries q;

CREATE VIEW argus.nodes AS
SELECT n.node_id,
       n.kind,
       n.join_level,
       n.sequence_id,
       (SELECT array_agg(e.parent_id ORDER BY e.position)
          FROM argus_catalog.edges e WHERE e.child_id = n.node_id) AS parents,
       n.definition,
       n.layout,
       (SELECT array_agg(q.name ORDER BY q.name)
          FROM argus_catalog.query_nodes qn JOIN argus_catalog.queries q USING (query_id)
         WHERE qn.node_id = n.node_id) AS used_by,
       format('%I.%I', n.hist_schema, n.hist_name) AS history,
       format('%I.%I', 'argus_net', 'n' || n.node_id || '_delta') AS delta,
       n.insert_only,
       st.hist_rows AS rows,
       st.horizon_column || ' > ' || st.horizon AS horizon,  -- rows kept: older were purged
       n.created_at,
       -- the last cycle that maintained this node: applied its changes or rebuilt it
       (SELECT CASE WHEN m.rebuilt THEN 'rebuild' ELSE 'apply' END
          FROM argus_catalog.run_nodes m WHERE m.node_id = n.node_id AND m.rebuilt IS NOT NULL
         ORDER BY m.run_id DESC LIMIT 1) AS last_maintenance,
       round(st.apply_ms_row::numeric, 5) AS apply_ms_per_row,
       round(st.rebuild_ms_row::numeric, 5) AS rebuild_ms_per_row,
       n.node_id IN (SELECT node_id FROM argus.excluded_nodes()) AS isolated,
       -- how its rows that leave by themselves are found: through an index of the
       -- columns they expire by, or by a scan (argus.expiry_upkeep)
       CASE WHEN n.expires_by IS NOT NULL
            THEN CASE WHEN n.expiry_scanned THEN 'scan' ELSE 'index' END END AS expired_by
  FROM argus_catalog.nodes n
  JOIN argus_catalog.node_stats st USING (node_id);

CREATE VIEW argus.loads AS
SELECT load_id, stream, rows, source, loaded_at FROM argus_catalog.loads;

CREATE VIEW argus.runs AS
SELECT r.run_id,
       r.started_at,
       r.finished_at,
       round(extract(epoch FROM r.finished_at - r.started_at)::numeric * 1000, 1) AS ms,
       r.status,
       r.rows_in,
       (SELECT jsonb_object_agg(s.stream, s.rows) FROM argus_catalog.run_streams s
         WHERE s.run_id = r.run_id) AS rows_per_stream,
       (SELECT jsonb_object_agg(s.stream, s.late) FROM argus_catalog.run_streams s
         WHERE s.run_id = r.run_id AND s.late > 0) AS late_rows,
       (SELECT jsonb_object_agg(s.stream, s.quarantined) FROM argus_catalog.run_streams s
         WHERE s.run_id = r.run_id AND s.quarantined > 0) AS quarantined_rows,
       -- (null: a query whose answer is a deferred join, and whose inputs changed: its
       -- changes are computed when its changes view is read, and no cycle counts them)
       (SELECT jsonb_object_agg(q.key, q.value->0) FROM jsonb_each(r.queries::jsonb) q)
           AS new_rows,
       (SELECT jsonb_object_agg(q.key, q.value->1) FROM jsonb_each(r.queries::jsonb) q
         WHERE (q.value->>1)::bigint > 0) AS retracted_rows,
       r.isolated AS failed_queries,  -- queries this cycle isolated: see argus.queries
       r.nodes_run,
       r.clock,
       r.error,
       (SELECT jsonb_object_agg(s.stream, s.ignored_deletes) FROM argus_catalog.run_streams s
         WHERE s.run_id = r.run_id AND s.ignored_deletes > 0) AS ignored_deletes
  FROM argus_catalog.runs r;

CREATE VIEW argus.index AS
SELECT t.node_id,
       n.kind,
       t.sources,
       p.canonical AS predset,
       d.canonical AS on_parents,
       t.svoa,
       t.jvoas,
       st.hist_rows AS rows
  FROM argus_catalog.topology t
  JOIN argus_catalog.nodes n USING (node_id)
  JOIN argus_catalog.node_stats st USING (node_id)
  JOIN argus_catalog.predsets p ON p.predset_id = t.predset_id
  LEFT JOIN argus_catalog.predsets d ON d.predset_id = t.dpredset_id;

-- Rows a cycle held back: an event time further ahead of the server's clock than
-- settings.max_clock_lead (which would move the stream clock and expire every window).
-- `argus quarantine release` returns them to their inbox. Only the rows of streams
-- whose history the reader may read (a reader of answers saw every stream's; a helper),
-- filtered before any condition of the reader's (security_barrier: a cheap function of
-- its own in a WHERE saw the others; a helper).
CREATE VIEW argus.quarantine WITH (security_barrier) AS
SELECT q.quarantine_id, q.stream, q.row, q.reason, q.run_id, q.held_at,
       q.row_text  -- a row jsonb cannot hold (past 256 MB): its record's text instead
  FROM argus_catalog.quarantine q
 WHERE EXISTS (SELECT FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'argus_streams' AND c.relname = q.stream
                  AND has_table_privilege(c.oid, 'SELECT'));

-- Every re-plan's decision (argus.adapt) with its prediction, in the optimizer's row
-- operations per cycle, next to what the query's own nodes measured: their time per
-- cycle over the 10 cycles before it (old_ms) and the 10 after it (new_ms).
CREATE VIEW argus.migrations AS
SELECT m.migration_id, m.query, m.at, m.after_run, m.strategy, m.migrated, m.forced,
       m.triggered, m.why,
       m.old_trees, m.new_trees, m.predicted_old, m.predicted_new, m.build_rows, m.build_ms,
       m.old_ms, m.lazy_nodes,
       (SELECT count(*) FROM argus_catalog.nodes n
         WHERE n.node_id = ANY(m.lazy_nodes) AND n.layout ? 'lazy') AS still_lazy,
       (SELECT sum(n.ms + coalesce(n.flush_ms, 0)) / nullif(count(DISTINCT r.run_id), 0)
          FROM (SELECT run_id FROM argus_catalog.runs
                 WHERE run_id > m.after_run AND status = 'ok'
                 ORDER BY run_id LIMIT 10) r
          LEFT JOIN argus_catalog.run_nodes n
                 ON n.run_id = r.run_id AND n.node_id = ANY(m.new_nodes)) AS new_ms
  FROM argus_catalog.migrations m;
