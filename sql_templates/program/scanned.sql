-- A signed node's statement over large deltas, planned for them, writes without
-- counting (program/counted returns every row to a CTE: ~0.4 us a row, against ~0.03
-- for a scan of the delta): its node counts its delta once at its end (count_scanned).
{executed};
            argus_scan := true;
            argus_p := 0;
            argus_m := 0
