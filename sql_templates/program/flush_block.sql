-- Merge a node's delta into its history when the delta has rows.
    IF {var} > 0 THEN
        {statement};
    END IF;
