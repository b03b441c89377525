-- One input's changes, row by row (each in a subtransaction of its own: only in the
-- cycle after a failure), until the node's row-level expressions fail on one. A
-- set-returning function's first row ({limit}): its arguments fail there, and a row
-- expanding past the bound (the failure of the rows together) would be expanded whole.
        IF argus_culprit IS NULL THEN
            DECLARE
                {row} record;
            BEGIN
                FOR {row} IN SELECT * FROM {source} AS argus_input LOOP
                    BEGIN
                        PERFORM {exprs}{partners}{limit};
                    EXCEPTION WHEN OTHERS THEN
                        argus_culprit := format('%s %s (%s)', {what}, to_jsonb({row}) - 'argus_sign', SQLERRM);
                        EXIT;
                    END;
                END LOOP;
            END;
        END IF;
