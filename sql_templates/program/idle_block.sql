-- A stream no node reads (idle: no query uses it) has its rows appended to its history
-- and nothing else, each row written once: the inbox taken whole when it is large and no
-- load writes to it (locked, appended, truncated), else claimed row by row straight into
-- the history. With settings.lazy_history_bytes set (NULL: at every cycle), its rows
-- wait in its inbox until the inbox's file grows past that, and are appended in bulk,
-- taken whole (row by row only while loads write to it, until a cycle finds none); a
-- query registered over it meanwhile makes it a read stream, and the next cycle claims
-- what waits there like any new rows.
    IF argus_lazy_limit IS NULL OR pg_relation_size({inbox_name}::regclass) > argus_lazy_limit THEN
        argus_t := clock_timestamp();
        argus_idle_locked := false;
        IF argus_lazy_limit IS NOT NULL
           OR pg_relation_size({inbox_name}::regclass) > argus_inbox_limit THEN
            BEGIN
                LOCK TABLE {inbox} IN ACCESS EXCLUSIVE MODE NOWAIT;
                argus_idle_locked := true;
            EXCEPTION WHEN lock_not_available THEN
                argus_idle_locked := false;
            END;
        END IF;
        IF argus_idle_locked THEN
            {claim_locked} INTO argus_idle_n, argus_idle_time, argus_idle_late, argus_idle_held;
            {append};
            TRUNCATE {inbox};
        ELSE
            {claim} INTO argus_idle_n, argus_idle_time, argus_idle_late, argus_idle_held;
        END IF;
        INSERT INTO argus_catalog.run_streams (run_id, stream, rows, late, quarantined)
        VALUES (argus_run, {name}, argus_idle_n, argus_idle_late[1], argus_idle_held[1]);
        argus_claimed_time := greatest(argus_claimed_time, argus_idle_time);
        argus_ids := argus_ids || {id}::bigint;
        argus_ins := argus_ins || argus_idle_n;
        argus_ret := argus_ret || 0::bigint;
        argus_ms := argus_ms || extract(epoch FROM clock_timestamp() - argus_t) * 1000;
    END IF;
