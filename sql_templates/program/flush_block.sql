-- Maintain one node's history at the end of the cycle; record how long it took.
    IF {condition} THEN
        argus_at := {id};
        argus_t := clock_timestamp();
{body}
        argus_fids := argus_fids || {id}::bigint;
        argus_fms := argus_fms || extract(epoch FROM clock_timestamp() - argus_t) * 1000;
        IF argus_fms[cardinality(argus_fms)] > {slow} THEN  -- a sign of life on long cycles
            RAISE NOTICE 'argus: node % (%) maintained its history in % s', {id}, {kind},
                round(argus_fms[cardinality(argus_fms)]::numeric / 1000, 1);
        END IF;
    END IF;
