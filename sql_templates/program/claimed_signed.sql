-- What the claim inserted and retracted per stream, when some are tables (argus.tables):
-- a table's delta holds the rows that changed or went (retracted) and the rows now.
    argus_ins := argus_ins || ARRAY(SELECT c - r FROM unnest(ARRAY[{vars}]::bigint[],
                                                        argus_retracted) AS u(c, r));
    argus_ret := argus_ret || argus_retracted;
