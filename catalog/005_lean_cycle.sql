-- Less work per cycle.
--
-- The per-cycle logs are written for every node and query of every cycle, hundreds of
-- rows: without foreign keys to argus_catalog.runs, whose per-row checks cost a cycle
-- of 150 queries about 2 ms. Nothing deletes runs; the logs are trimmed by run_id.
ALTER TABLE argus_catalog.run_streams DROP CONSTRAINT IF EXISTS run_streams_run_id_fkey;
ALTER TABLE argus_catalog.run_nodes DROP CONSTRAINT IF EXISTS run_nodes_run_id_fkey;
ALTER TABLE argus_catalog.run_queries DROP CONSTRAINT IF EXISTS run_queries_run_id_fkey;
ALTER TABLE argus_catalog.run_maintenance DROP CONSTRAINT IF EXISTS run_maintenance_run_id_fkey;

-- Selections over an aggregate's groups (HAVING) keep no table: their history is a view
-- of the aggregate's (sql_templates/select/create_view.sql, node definition "virtual").
-- Nothing maintains them, so nothing is chosen for them: choose_maintenance as in 003,
-- without the virtual nodes.

CREATE OR REPLACE FUNCTION argus.choose_maintenance(run bigint, ids bigint[], ins bigint[], ret bigint[])
RETURNS bigint[] LANGUAGE sql AS $$
    WITH d AS (
        SELECT * FROM unnest(ids, ins, ret) AS u(node_id, ins, ret)
    ), c AS (
        SELECT n.node_id,
               d.ins + d.ret + coalesce((
                   SELECT sum(pd.ins + pd.ret) FROM argus_catalog.edges e
                     JOIN d AS pd ON pd.node_id = e.parent_id
                    WHERE e.child_id = n.node_id), 0) AS changes,
               greatest(n.hist_rows + d.ins - d.ret, 0) + coalesce((
                   SELECT sum(greatest(p.hist_rows + coalesce(pd.ins - pd.ret, 0), 0))
                     FROM argus_catalog.edges e
                     JOIN argus_catalog.nodes p ON p.node_id = e.parent_id
                     LEFT JOIN d AS pd ON pd.node_id = e.parent_id
                    WHERE e.child_id = n.node_id), 0) AS rebuild_rows,
               n.apply_ms_row, n.rebuild_ms_row
          FROM d JOIN argus_catalog.nodes n USING (node_id)
         WHERE n.kind <> 'stream' AND NOT n.insert_only
           AND NOT (n.kind = 'select' AND n.definition ? 'virtual')
    ), chosen AS (
        INSERT INTO argus_catalog.run_maintenance
        SELECT run, c.node_id, c.changes, c.rebuild_rows,
               c.apply_ms_row * (c.changes + 10), c.rebuild_ms_row * (c.rebuild_rows + 10),
               CASE s.maintenance
                   WHEN 'rebuild' THEN true
                   WHEN 'apply' THEN false
                   ELSE coalesce(c.rebuild_ms_row * (c.rebuild_rows + 10)
                                 < 0.8 * c.apply_ms_row * (c.changes + 10), false)
               END
          FROM c, argus_catalog.settings s
         WHERE c.changes > 0
        RETURNING node_id, rebuilt
    )
    SELECT coalesce(array_agg(node_id), '{}') FROM chosen WHERE rebuilt
$$;
