-- Less work per cycle.
--
-- The per-cycle logs are written for every node and query of every cycle, hundreds of
-- rows: without foreign keys to argus_catalog.runs, whose checks cost a lookup per
-- logged row. Nothing deletes runs; the logs are trimmed by run_id.
ALTER TABLE argus_catalog.run_streams DROP CONSTRAINT IF EXISTS run_streams_run_id_fkey;
ALTER TABLE argus_catalog.run_nodes DROP CONSTRAINT IF EXISTS run_nodes_run_id_fkey;
ALTER TABLE argus_catalog.run_queries DROP CONSTRAINT IF EXISTS run_queries_run_id_fkey;
ALTER TABLE argus_catalog.run_maintenance DROP CONSTRAINT IF EXISTS run_maintenance_run_id_fkey;

-- Selections over an aggregate's groups (HAVING) keep no tables: their history and
-- delta are views of the aggregate's (sql_templates/select/create_view.sql, node
-- definition "virtual"). Nothing maintains them, so nothing is chosen for them
-- (choose_maintenance as in 003), and no cycle clears their deltas (run_cycle as in
-- 004, without the virtual nodes).

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

CREATE OR REPLACE FUNCTION argus.run_cycle(wait boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_run   bigint;
    v_last  bigint;
    v_error text;
    v_node  bigint;
    v_delta text;
    v_timeout text;
    v_limit bigint;
    v_page_cost real;
BEGIN
    IF wait THEN
        PERFORM pg_advisory_xact_lock(1095911253, 83);  -- argus.names.CYCLE_LOCK
    ELSIF NOT pg_try_advisory_xact_lock(1095911253, 83) THEN
        RAISE NOTICE 'argus: another cycle is running on this database; skipped';
        RETURN NULL;
    END IF;
    IF (SELECT program_stale FROM argus_catalog.settings) THEN
        PERFORM argus.assemble_program();
    END IF;
    SELECT truncate_delta_bytes, random_page_cost INTO v_limit, v_page_cost
      FROM argus_catalog.settings;
    IF v_page_cost IS NOT NULL THEN
        PERFORM set_config('random_page_cost', v_page_cost::text, true);
    END IF;
    SELECT max(run_id) INTO v_last FROM argus_catalog.runs WHERE status = 'ok';
    INSERT INTO argus_catalog.runs (started_at, status)
    VALUES (clock_timestamp(), 'running') RETURNING run_id INTO v_run;
    BEGIN
        -- Clear the last cycle's deltas (see 002).
        v_timeout := current_setting('lock_timeout');
        PERFORM set_config('lock_timeout', '50ms', true);
        FOR v_node IN SELECT r.node_id FROM argus_catalog.run_nodes r
                        JOIN argus_catalog.nodes n USING (node_id)
                       WHERE r.run_id = v_last AND r.inserted + r.retracted > 0
                         AND NOT (n.kind = 'select' AND n.definition ? 'virtual') LOOP
            v_delta := format('argus_net.%I', 'n' || v_node || '_delta');
            IF pg_relation_size(v_delta::regclass) > v_limit THEN
                BEGIN
                    EXECUTE 'TRUNCATE ' || v_delta;
                EXCEPTION WHEN lock_not_available THEN
                    EXECUTE 'DELETE FROM ' || v_delta;
                END;
            ELSE
                EXECUTE 'DELETE FROM ' || v_delta;
            END IF;
        END LOOP;
        PERFORM set_config('lock_timeout', v_timeout, true);
        PERFORM argus_net.cycle_program(v_run);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
        UPDATE argus_catalog.runs SET status = 'failed', error = v_error,
               finished_at = clock_timestamp() WHERE run_id = v_run;
        RETURN v_run;
    END;

    INSERT INTO argus_catalog.run_queries (run_id, query, inserted, retracted)
    SELECT v_run, q.name, coalesce(r.inserted, 0), coalesce(r.retracted, 0)
      FROM argus_catalog.queries q
      LEFT JOIN argus_catalog.run_nodes r ON r.run_id = v_run AND r.node_id = q.output_node;
    PERFORM argus.learn_maintenance(v_run);
    UPDATE argus_catalog.nodes n SET hist_rows = n.hist_rows + r.inserted - r.retracted
      FROM argus_catalog.run_nodes r
     WHERE r.run_id = v_run AND r.node_id = n.node_id AND r.inserted + r.retracted > 0;
    UPDATE argus_catalog.runs SET
           status = 'ok', finished_at = clock_timestamp(), clock = argus.clock_now(),
           rows_in = (SELECT coalesce(sum(rows), 0) FROM argus_catalog.run_streams
                       WHERE run_id = v_run),
           nodes_run = (SELECT count(*) FROM argus_catalog.run_nodes r
                          JOIN argus_catalog.nodes n USING (node_id)
                         WHERE r.run_id = v_run AND n.kind <> 'stream')
     WHERE run_id = v_run;
    DELETE FROM argus_catalog.run_nodes WHERE run_id < v_run - 500;
    DELETE FROM argus_catalog.run_maintenance WHERE run_id < v_run - 500;
    RETURN v_run;
END $$;
