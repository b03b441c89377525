-- Maintain one node's history at the end of the cycle; record how long it took.
    IF {condition} THEN
        argus_at := {id};
        argus_t := clock_timestamp();
{body}
        argus_fids := argus_fids || {id}::bigint;
        argus_fms := argus_fms || extract(epoch FROM clock_timestamp() - argus_t) * 1000;
        IF argus_fms[cardinality(argus_fms)] > {slow} THEN  -- a sign of life on long cycles
            PERFORM argus.slow_node({id}, {kind}, argus_fms[cardinality(argus_fms)]);
        END IF;
    END IF;
