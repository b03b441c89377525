-- Evaluate one node when one of its parents' deltas has rows; record its statistics.
-- argus_at names the node whose statement is running, should one fail.
    IF {condition} THEN
        argus_at := {id};
        argus_t := clock_timestamp();
        argus_i := 0;
        argus_r := 0;
{body}
{counts}
{analyze}
        argus_ids := argus_ids || {id}::bigint;
        argus_ins := argus_ins || argus_i;
        argus_ret := argus_ret || argus_r;
        argus_ms := argus_ms || extract(epoch FROM clock_timestamp() - argus_t) * 1000;
        IF argus_ms[cardinality(argus_ms)] > {slow} THEN  -- a sign of life on long cycles
            PERFORM argus.slow_node({id}, {kind}, argus_ms[cardinality(argus_ms)], argus_i + argus_r);
        END IF;
    END IF;
