-- One input's changes, row by row (each in a subtransaction of its own: only in the
-- cycle after a failure), until the node's row-level expressions fail on one.
        IF argus_culprit IS NULL THEN
            DECLARE
                {row} record;
            BEGIN
                FOR {row} IN SELECT * FROM {source} AS argus_input LOOP
                    BEGIN
                        PERFORM {exprs}{partners};
                    EXCEPTION WHEN OTHERS THEN
                        argus_culprit := format('%s %s (%s)', {what}, to_jsonb({row}) - 'argus_sign', SQLERRM);
                        EXIT;
                    END;
                END LOOP;
            END;
        END IF;
