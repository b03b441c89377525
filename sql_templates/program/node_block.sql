-- Evaluate one insert-only node when one of its parents' deltas has rows.
    IF {condition} THEN
        argus_t := clock_timestamp();
        {statement};
        GET DIAGNOSTICS {var} = ROW_COUNT;
        argus_ids := argus_ids || {id}::bigint;
        argus_ins := argus_ins || {var};
        argus_ret := argus_ret || 0::bigint;
        argus_ms := argus_ms || extract(epoch FROM clock_timestamp() - argus_t) * 1000;
    END IF;
