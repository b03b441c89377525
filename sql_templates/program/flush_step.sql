    IF {condition} THEN
        {statement};
    END IF;
