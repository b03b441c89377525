-- What the claim inserted per stream; streams retract nothing.
    argus_ins := argus_ins || ARRAY[{vars}]::bigint[];
    argus_ret := argus_ret || array_fill(0::bigint, ARRAY[{count}]);
