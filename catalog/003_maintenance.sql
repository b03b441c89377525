-- Never slower than recomputation, per node and per cycle.
--
-- A node's changes (its delta) always come from the incremental rules: they read only
-- the parents' deltas and the materialized histories, so they cost what the changes
-- cost. What can cost more than recomputing is *maintaining the node's history* on
-- the signed path: every changed row is retracted and inserted by value, through its
-- hash, a few microseconds a row. When a cycle changes a large part of a node (a HAVING
-- over an aggregate whose groups all moved, a set operation over small inputs), it is
-- cheaper to rebuild the history from the parents' new histories, with the node's own
-- from-scratch SQL (its backfill). argus.choose_maintenance() decides, node by node,
-- from costs learned by earlier cycles (argus_catalog.nodes.apply_ms_row and
-- rebuild_ms_row, milliseconds per row); `argus explain` shows the choice.

ALTER TABLE argus_catalog.settings
    -- 'auto': the cheaper of the two by the learned costs; 'apply' / 'rebuild': always
    ADD COLUMN maintenance text NOT NULL DEFAULT 'auto'
        CHECK (maintenance IN ('auto', 'apply', 'rebuild')),
    -- The network's tables and indexes are hot in memory during a cycle, where a random
    -- page costs little more than a sequential one; with PostgreSQL's default (4) the
    -- planner scans a whole history rather than probing its index once per delta row.
    -- NULL: the server's setting.
    ADD COLUMN random_page_cost real DEFAULT 1.1,
    -- The version of the node code stored in argus_catalog.nodes (argus.compile
    -- CODE_VERSION): older code is recompiled when argus connects.
    ADD COLUMN code_version int NOT NULL DEFAULT 0,
    -- A cycle takes an inbox whose file grew past this many bytes whole (locked, read,
    -- truncated) when no load is writing to it, instead of deleting its rows one by one.
    ADD COLUMN truncate_inbox_bytes bigint NOT NULL DEFAULT 262144;

ALTER TABLE argus_catalog.nodes
    ADD COLUMN apply_ms_row double precision,   -- learned ms per change applied
    ADD COLUMN rebuild_ms_row double precision; -- learned ms per row a rebuild reads and writes

ALTER TABLE argus_catalog.run_nodes
    ADD COLUMN flush_ms double precision;       -- maintaining the history (end of cycle)

-- Each cycle's choice for each signed node that changed.
CREATE TABLE argus_catalog.run_maintenance (
    run_id       bigint NOT NULL REFERENCES argus_catalog.runs ON DELETE CASCADE,
    node_id      bigint NOT NULL,
    changes      bigint NOT NULL,   -- rows applying handles: the node's and its parents' deltas
    rebuild_rows bigint NOT NULL,   -- rows rebuilding reads and writes: the parents' and its own
    apply_ms     double precision,  -- predicted (NULL: nothing learned yet)
    rebuild_ms   double precision,
    rebuilt      boolean NOT NULL,
    PRIMARY KEY (run_id, node_id)
);

-- Called by the cycle program once every node has its delta, before the histories are
-- maintained: which nodes to rebuild. ids/ins/ret: the rows each node wrote to its
-- delta this cycle. A rebuild must be predicted at least 20% cheaper, so that noise
-- does not flip a node back and forth; ten rows of fixed cost per statement keep tiny
-- cycles from looking expensive per row.
CREATE FUNCTION argus.choose_maintenance(run bigint, ids bigint[], ins bigint[], ret bigint[])
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

-- After a cycle: learn from what maintaining each node cost (moving averages).
CREATE FUNCTION argus.learn_maintenance(run bigint) RETURNS void LANGUAGE sql AS $$
    UPDATE argus_catalog.nodes n SET
           apply_ms_row = CASE WHEN m.rebuilt THEN n.apply_ms_row
                               ELSE coalesce(0.7 * n.apply_ms_row, 0)
                                    + CASE WHEN n.apply_ms_row IS NULL THEN 1 ELSE 0.3 END
                                      * r.flush_ms / (m.changes + 10) END,
           rebuild_ms_row = CASE WHEN NOT m.rebuilt THEN n.rebuild_ms_row
                                 ELSE coalesce(0.7 * n.rebuild_ms_row, 0)
                                      + CASE WHEN n.rebuild_ms_row IS NULL THEN 1 ELSE 0.3 END
                                        * r.flush_ms / (m.rebuild_rows + 10) END
      FROM argus_catalog.run_maintenance m
      JOIN argus_catalog.run_nodes r USING (run_id, node_id)
     WHERE m.run_id = run AND r.flush_ms IS NOT NULL AND n.node_id = m.node_id
$$;

CREATE OR REPLACE VIEW argus.nodes AS
SELECT n.node_id,
       n.kind,
       n.join_level,
       n.sequence_id,
       (SELECT array_agg(e.parent_id ORDER BY e.position)
          FROM argus_catalog.edges e WHERE e.child_id = n.node_id) AS parents,
       n.definition,
       (SELECT array_agg(q.name ORDER BY q.name)
          FROM argus_catalog.query_nodes qn JOIN argus_catalog.queries q USING (query_id)
         WHERE qn.node_id = n.node_id) AS used_by,
       format('%I.%I', n.hist_schema, n.hist_name) AS history,
       format('%I.%I', 'argus_net', 'n' || n.node_id || '_delta') AS delta,
       n.insert_only,
       n.hist_rows AS rows,
       n.horizon,
       n.created_at,
       -- the last cycle that maintained this node: applied its changes or rebuilt it
       (SELECT CASE WHEN m.rebuilt THEN 'rebuild' ELSE 'apply' END
          FROM argus_catalog.run_maintenance m WHERE m.node_id = n.node_id
         ORDER BY m.run_id DESC LIMIT 1) AS last_maintenance,
       round(n.apply_ms_row::numeric, 5) AS apply_ms_per_row,
       round(n.rebuild_ms_row::numeric, 5) AS rebuild_ms_per_row
  FROM argus_catalog.nodes n;

-- The cycle, as in 002, with the planner's random_page_cost of settings, and learning
-- the maintenance costs after the program.
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
                       WHERE r.run_id = v_last AND r.inserted + r.retracted > 0 LOOP
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
