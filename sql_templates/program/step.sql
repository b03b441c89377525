-- One statement of a node, run when its deltas have rows; adds to the node's row count.
        IF {condition} THEN
            {statement};
            GET DIAGNOSTICS argus_rc = ROW_COUNT;
            {var} := {var} + argus_rc;
        END IF;
