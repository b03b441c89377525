-- One statement of a signed node, run when its deltas have rows: counts the rows it
-- inserts and retracts as it writes them (program/counted).
        IF {condition} THEN
            {statement} INTO argus_p, argus_m;
            argus_i := argus_i + argus_p;
            argus_r := argus_r + argus_m;
        END IF;
