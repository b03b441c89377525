-- A signed node: rebuild its tables from the parents' new histories when
-- argus.choose_maintenance chose it this cycle, else apply its changes.
    IF {id} = ANY(argus_rebuild) THEN
{rebuild}
    ELSE
{apply}
    END IF;
