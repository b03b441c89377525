-- The stream clock moves to the largest event time claimed so far (read streams and
-- idle ones appended this cycle alike).
    argus_clock_new := greatest(argus_clock_old, argus_claimed_time);
    argus_clock_moved := argus_clock_new IS DISTINCT FROM argus_clock_old;
    UPDATE argus_catalog.clock SET previous = now, now = argus_clock_new;
