-- The clock before this cycle's claim (late rows are those behind it).
    SELECT now INTO argus_clock_old FROM argus_catalog.clock;  -- a plan kept, unlike clock_now()'s
