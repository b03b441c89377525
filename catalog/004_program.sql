-- The cycle program is assembled in the database, by the first cycle after the network
-- changed, from the code each node stored when it was compiled. A change (registering,
-- dropping a query or a stream) compiles and validates only its own nodes' code and
-- marks the program stale, so that registering query number N costs what query N
-- needs, not a rewrite of the code of the N-1 queries before it; and a cycle started
-- from psql or pg_cron runs the current network all the same.

ALTER TABLE argus_catalog.settings
    -- cycle_program's body around the nodes' code, with format() placeholders for the
    -- declarations, evaluation blocks, whether any node is signed, flush blocks and
    -- purges (argus.compile.frame; it depends on the streams only)
    ADD COLUMN program_frame text,
    ADD COLUMN program_stale boolean NOT NULL DEFAULT true;

ALTER TABLE argus_catalog.nodes
    -- the node's purge code (argus.compile.purge_block), recomputed whenever the
    -- network changes, since it depends on the node's consumers
    ADD COLUMN purge_block text;

CREATE FUNCTION argus.assemble_program() RETURNS void
LANGUAGE plpgsql SET check_function_bodies = off AS $$
DECLARE
    v_frame text := (SELECT program_frame FROM argus_catalog.settings);
    v_body  text;
BEGIN
    IF v_frame IS NULL THEN
        RAISE EXCEPTION 'argus: this network''s code was compiled by an older argus'
              USING HINT = 'run any argus command (e.g. argus status): it recompiles on connect';
    END IF;
    SELECT format(v_frame,
                  coalesce(string_agg(format('    argus_n%s bigint := 0;', node_id), E'\n'
                                      ORDER BY join_level, sequence_id, node_id), ''),
                  coalesce(string_agg(cycle_block, E'\n'
                                      ORDER BY join_level, sequence_id, node_id), ''),
                  coalesce(bool_or(kind <> 'stream' AND NOT insert_only), false)::text,
                  coalesce(string_agg(flush_block, E'\n'
                                      ORDER BY join_level, sequence_id, node_id), ''),
                  coalesce(string_agg(purge_block, E'\n'
                                      ORDER BY join_level, sequence_id, node_id), ''))
      INTO v_body FROM argus_catalog.nodes;
    EXECUTE format('CREATE OR REPLACE FUNCTION argus_net.cycle_program(argus_run bigint) '
                   'RETURNS void LANGUAGE plpgsql AS %L', v_body);
    UPDATE argus_catalog.settings SET program_stale = false;
END $$;

-- The cycle, as in 003, assembling the program first when the network changed.
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
