-- Claim every stream's inbox in one statement, under one snapshot, and advance the
-- stream clock to the largest event time claimed so far (rows too far ahead of the
-- server's clock are held back in the quarantine instead). Rows older than the clock
-- (late) are claimed like any other, and counted. Large inboxes are taken whole when
-- no load is writing to any of them: locked (loads wait for the end of the cycle),
-- read in place by the stream's children (argus.nodes.stream.in_inbox) and truncated at
-- the end of the cycle (sql_templates/program/inbox_large.sql says when); otherwise the
-- claim moves the rows it takes to the stream's delta table, and rows committed during
-- the cycle wait for the next. Locked, the rows held back leave the inboxes by a
-- statement of their own, run only when the claim counted some. A
-- stream that no node reads is taken only when its inbox grew past unread_inbox_bytes
-- (argus_take); until then its rows wait, written once. The claim keeps one plan
-- (force_generic_plan): with the variables folded in, an unread stream's part gone
-- (argus_take false), its custom plans looked so much cheaper than the kept one that
-- PostgreSQL planned it again at every cycle once that stream's inbox had grown
-- (Nexmark q3 alone, bids unread, 100 events a cycle: 2.90 -> 2.53 ms). Not on Citus,
-- which cannot distribute a kept plan of a statement with variables (asked at each
-- cycle: a stream distributed before any query read it assembles no program again).
    argus_t := clock_timestamp();
    SELECT now INTO argus_clock_old FROM argus_catalog.clock;  -- a plan kept, unlike clock_now()'s
    argus_size := ARRAY[{sizes}]::bigint[];
    SELECT array_agg(r.inbox_bytes ORDER BY u.i) INTO argus_size_last
      FROM unnest(ARRAY[{names}]::text[]) WITH ORDINALITY AS u(stream, i)
      LEFT JOIN argus_catalog.run_streams r ON r.stream = u.stream
       AND r.run_id = (SELECT max(run_id) FROM argus_catalog.run_streams WHERE run_id < argus_run);
    argus_take := ARRAY[{takes}];
    argus_locked := false;
    IF {large} THEN
        BEGIN
            LOCK TABLE {inboxes} IN ACCESS EXCLUSIVE MODE NOWAIT;
            argus_locked := true;
        EXCEPTION WHEN lock_not_available THEN
            argus_locked := false;
        END;
    END IF;
    argus_plans := current_setting('plan_cache_mode');
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    END IF;
    IF argus_locked THEN
        {claim_locked} INTO {vars}, argus_claimed_time, argus_late, argus_held, argus_retracted,
                             argus_ignored;
{hold_locked}
    {written}
{analyze_locked}
    ELSE
        {claim} INTO {vars}, argus_claimed_time, argus_late, argus_held, argus_retracted,
                      argus_ignored;
    {written}
{analyze}
    END IF;
    PERFORM set_config('plan_cache_mode', argus_plans, true);
    INSERT INTO argus_catalog.run_streams (run_id, stream, rows, late, quarantined, inbox_bytes,
                                           ignored_deletes)
    SELECT argus_run, u.* FROM unnest(ARRAY[{names}]::text[], ARRAY[{vars}]::bigint[],
                                      argus_late, argus_held, ARRAY[{after}]::bigint[],
                                      argus_ignored) AS u;
    argus_clock_new := greatest(argus_clock_old, argus_claimed_time);
    argus_clock_moved := argus_clock_new IS DISTINCT FROM argus_clock_old;
    UPDATE argus_catalog.clock SET previous = now, now = argus_clock_new;
    argus_ids := argus_ids || ARRAY[{ids}]::bigint[];
{counted}
    argus_ms := argus_ms || array_fill(extract(epoch FROM clock_timestamp() - argus_t)
                                       * 1000 / {count}, ARRAY[{count}]);
