-- A signed node: rebuild its tables from the parents' new histories when
-- the program chose it this cycle (cycle_program.sql), else apply its changes.
    IF {id} = ANY(argus_rebuild) THEN
{rebuild}
    ELSE
{apply}
    END IF;
