-- In place of a node that failed, in the cycle that runs again without it: which row of
-- its inputs' changes its expressions fail on (argus_culprit). The node itself, and
-- what only failed queries use, are left out of this cycle; whatever the search meets,
-- the cycle goes on.
    IF {condition} THEN
        BEGIN
{searches}
        EXCEPTION WHEN OTHERS THEN
            argus_culprit := 'not named: looking for it failed (' || SQLERRM || ')';
        END;
    END IF;
