-- The network's execution code, assembled from every node's stored blocks in evaluation
-- order at the first cycle after the network changed (ARGUS's code assembly; see
-- argus.assemble_program in catalog/functions.sql). argus_written[<id>] holds the rows
-- node <id> wrote to its delta this cycle; a node runs only if a parent's is non-zero.
--
-- When a statement of a node fails, the program's work is rolled back (claims
-- included) and the program returns the node and the error (failed_node, …), so that
-- argus.run_cycle isolates the queries that use it and runs again without them; so
-- when the cycle runs past its time limit in a node (settings.node_timeout). Any
-- failure that is not a node's (no node was running, or the server: a lock, memory, a
-- cancelled statement) fails the cycle whole.
--
-- argus_dirty names the nodes whose delta the last cycle filled, for the clearing
-- block to empty (argus.run_cycle truncates the large ones itself); argus_settings
-- is argus_catalog.settings, read once by argus.run_cycle. outputs and clock_outputs
-- name the working queries each output node answers (those whose output reads the
-- clock apart), as they were when the program was assembled, for the cycle's report.
--
-- A name that is both a column and a variable in a statement is the column (a stream's
-- column `found`, `outputs`, …): the program's own variables all start with argus_,
-- which no user's column may, and none is the name of a column of argus's own; its
-- results (failed_node, outputs, …) are only assigned.
#variable_conflict use_column
DECLARE
    argus_t timestamptz;
    argus_rc bigint;
    argus_i bigint;
    argus_r bigint;
    argus_p bigint;
    argus_m bigint;
    argus_scan boolean := false;  -- a statement left its node's delta to count (program/scanned)
    argus_claimed_time timestamptz;
    argus_late bigint[];
    argus_held bigint[];
    argus_retracted bigint[];
    argus_ignored bigint[];  -- per stream: deletes of keys a table did not have
    argus_clock_old timestamptz;
    argus_clock_new timestamptz;
    argus_clock_moved boolean := false;
    argus_purge boolean := argus_settings.purge;
    argus_inbox_limit bigint := argus_settings.truncate_inbox_bytes;
    argus_lead interval := argus_settings.max_clock_lead;
    argus_horizon timestamptz := now() + argus_lead;
    argus_unread_limit bigint := argus_settings.unread_inbox_bytes;
    -- plans are kept from a session's second cycle on: a session that runs one cycle (cron)
    -- would pay for keeping plans it never uses again (13% of its cycle at 1,000 queries)
    argus_plan_kept_rows bigint := CASE WHEN current_setting('argus.cycled', true) = 'on'
                                        THEN coalesce(argus_settings.plan_kept_rows, -1)
                                        ELSE -1 END;
    argus_take_waiting boolean := current_setting('argus.claim_waiting', true) = 'on';
    argus_take boolean[];
    argus_size bigint[];
    argus_size_last bigint[];
    argus_locked boolean := false;
    argus_plans text;  -- plan_cache_mode, set apart for the claim (program/claim_block)
    argus_at bigint;
    argus_isolate boolean := true;  -- false: a failing node fails the program
    argus_culprit text;
    argus_ids bigint[] := ARRAY[]::bigint[];
    argus_ins bigint[] := ARRAY[]::bigint[];
    argus_ret bigint[] := ARRAY[]::bigint[];
    argus_ms float8[] := ARRAY[]::float8[];
    argus_rebuild bigint[] := ARRAY[]::bigint[];
    argus_c_ids bigint[] := ARRAY[]::bigint[];  -- the choice per signed node that changed
    argus_c_changes bigint[];
    argus_c_rows bigint[];
    argus_c_apply_ms float8[];
    argus_c_rebuild_ms float8[];
    argus_c_rebuilt boolean[];
    argus_fids bigint[] := ARRAY[]::bigint[];
    argus_fms float8[] := ARRAY[]::float8[];
    argus_est real[] := argus.delta_estimates();  -- per node: its delta's rows per page
    argus_hist real[] := argus.history_rows();  -- per node: its history's rows
{claimed}{declarations}
BEGIN
    BEGIN
{clear}
{claim}
{evaluate}
        argus_at := NULL;
-- Every node has its delta: choose, per signed node that changed, between applying its
-- changes to its history and rebuilding it from its parents' new histories, by costs
-- learned from earlier cycles (argus_catalog.node_stats; never slower than
-- recomputation, per node and cycle). A rebuild must be predicted at least 20% cheaper,
-- so that noise does not flip a node back and forth; ten rows of fixed cost per
-- statement keep tiny cycles from looking expensive per row. A parent's counts are
-- found by its place in argus_ids. The choice is recorded with the node's run_nodes row.
        IF {signed} THEN
            WITH s AS (  -- the signed nodes that ran
                SELECT d.*, st.hist_rows, st.apply_ms_row, st.rebuild_ms_row
                  FROM unnest(argus_ids, argus_ins, argus_ret) AS d(node_id, ins, ret)
                  JOIN argus_catalog.nodes n USING (node_id)
                  JOIN argus_catalog.node_stats st USING (node_id)
                 WHERE n.rebuildable
            ), c AS (  -- the rows applying handles, and those rebuilding reads and writes
                SELECT s.node_id,
                       s.ins + s.ret + sum(coalesce(argus_ins[x.i] + argus_ret[x.i], 0))::bigint
                           AS changes,
                       greatest(s.hist_rows + s.ins - s.ret, 0)
                       + sum(greatest(ps.hist_rows + coalesce(argus_ins[x.i] - argus_ret[x.i], 0),
                                      0))::bigint AS rebuild_rows,
                       s.apply_ms_row, s.rebuild_ms_row
                  FROM s JOIN argus_catalog.edges e ON e.child_id = s.node_id
                  JOIN argus_catalog.node_stats ps ON ps.node_id = e.parent_id
                 CROSS JOIN LATERAL (SELECT array_position(argus_ids, e.parent_id)) AS x(i)
                 GROUP BY s.node_id, s.ins, s.ret, s.hist_rows, s.apply_ms_row, s.rebuild_ms_row
            ), chosen AS (
                SELECT c.node_id, c.changes, c.rebuild_rows, a.apply_ms, a.rebuild_ms,
                       CASE argus_settings.maintenance
                           WHEN 'rebuild' THEN true
                           WHEN 'apply' THEN false
                           ELSE coalesce(a.rebuild_ms < 0.8 * a.apply_ms, false)
                       END AS rebuilt
                  FROM c, LATERAL (SELECT c.apply_ms_row * (c.changes + 10),
                                          c.rebuild_ms_row * (c.rebuild_rows + 10))
                                  AS a(apply_ms, rebuild_ms)
                 WHERE c.changes > 0
            )
            SELECT coalesce(array_agg(node_id), ARRAY[]::bigint[]), array_agg(changes),
                   array_agg(rebuild_rows), array_agg(apply_ms), array_agg(rebuild_ms),
                   array_agg(rebuilt),
                   coalesce(array_agg(node_id) FILTER (WHERE rebuilt), ARRAY[]::bigint[])
              INTO argus_c_ids, argus_c_changes, argus_c_rows, argus_c_apply_ms,
                   argus_c_rebuild_ms, argus_c_rebuilt, argus_rebuild
              FROM chosen;
        END IF;
{flush}
{purge}
        argus_at := NULL;
{release}
        INSERT INTO argus_catalog.run_nodes (run_id, node_id, inserted, retracted, ms, flush_ms,
                                             changes, rebuild_rows, apply_ms, rebuild_ms, rebuilt)
        SELECT argus_run, e.id, e.ins, e.ret, e.ms, f.ms,
               c.changes, c.rebuild_rows, c.apply_ms, c.rebuild_ms, c.rebuilt
          FROM unnest(argus_ids, argus_ins, argus_ret, argus_ms) AS e(id, ins, ret, ms)
          LEFT JOIN unnest(argus_fids, argus_fms) AS f(id, ms) ON f.id = e.id
          LEFT JOIN unnest(argus_c_ids, argus_c_changes, argus_c_rows, argus_c_apply_ms,
                           argus_c_rebuild_ms, argus_c_rebuilt)
                    AS c(id, changes, rebuild_rows, apply_ms, rebuild_ms, rebuilt) ON c.id = e.id;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        GET STACKED DIAGNOSTICS failed_state = RETURNED_SQLSTATE, failed_error = MESSAGE_TEXT;
        IF NOT argus_isolate OR argus_at IS NULL OR argus.server_error(failed_state)
               AND NOT (failed_state = '57014' AND failed_error LIKE '%statement timeout%') THEN
            RAISE;  -- (a node past node_timeout is the node's, as a failing row is)
        END IF;
        failed_node := argus_at;
        IF failed_state = '57014' THEN
            -- past node_timeout: the node that spent most of the cycle's time, evaluating
            -- and flushing, not the one running when it ran out (a registrar's slow
            -- selection spent it, and the stream's flush after it isolated every query
            -- over the stream; a helper)
            SELECT s.id INTO failed_node
              FROM (SELECT * FROM unnest(argus_ids, argus_ms) AS e(id, ms)
                    UNION ALL SELECT * FROM unnest(argus_fids, argus_fms)
                    UNION ALL SELECT argus_at, extract(epoch FROM clock_timestamp() - argus_t)
                                               * 1000) AS s
             GROUP BY s.id ORDER BY sum(s.ms) DESC, s.id LIMIT 1;
        END IF;
        RETURN;
    END;
    culprit := argus_culprit;
    outputs := {outputs};
    clock_outputs := {clock_outputs};
    nodes_run := cardinality(argus_ids) - {streams};
END
