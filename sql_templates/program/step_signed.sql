-- One statement of a signed node, run when its deltas have rows: counts the rows it
-- inserts and retracts as it writes them (program/counted) into argus_p and argus_m.
        IF {condition} THEN
            {statement};
            argus_i := argus_i + argus_p;
            argus_r := argus_r + argus_m;
        END IF;
