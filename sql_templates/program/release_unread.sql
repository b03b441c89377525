        IF {take} THEN
            TRUNCATE {inbox};
        END IF;
