-- A signed node counted its inserted and retracted rows as it wrote them, unless a
-- statement over large deltas did not (program/scanned): then its delta is counted.
        IF argus_scan THEN
            SELECT count(*) FILTER (WHERE {sign} > 0), count(*) FILTER (WHERE {sign} < 0)
              INTO argus_i, argus_r FROM {delta};
            argus_scan := false;
        END IF;
        {var} := argus_i + argus_r;
