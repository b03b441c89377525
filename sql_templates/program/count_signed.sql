-- A signed node reports inserted and retracted rows separately.
        argus_i := 0;
        argus_r := 0;
        IF {var} > 0 THEN
            SELECT count(*) FILTER (WHERE {sign} > 0), count(*) FILTER (WHERE {sign} < 0)
              INTO argus_i, argus_r FROM {delta};
        END IF;
