-- Claim every stream's inbox in one statement, under one snapshot.
    argus_t := clock_timestamp();
    {claim} INTO {vars};
    argus_ids := argus_ids || ARRAY[{ids}]::bigint[];
    argus_ins := argus_ins || ARRAY[{vars}]::bigint[];
    argus_ret := argus_ret || array_fill(0::bigint, ARRAY[{count}]);
    argus_ms := argus_ms || array_fill(extract(epoch FROM clock_timestamp() - argus_t)
                                       * 1000 / {count}, ARRAY[{count}]);
