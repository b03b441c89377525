-- A statement whose best plan depends on how many rows its deltas hold: while the
-- node's deltas are small (settings.plan_kept_rows), run with the plan PostgreSQL keeps
-- for the session (planning it at every cycle was ~17% of a small cycle); up to ten
-- times as many, with a second plan kept, made for deltas of that size (the same
-- statement again: PL/pgSQL keeps a plan per statement); otherwise planned for its
-- deltas' sizes at this cycle (EXECUTE).
IF {rows} <= argus_plan_kept_rows THEN
            {statement}{into};
        ELSIF {rows} <= argus_plan_kept_rows * {tier} THEN
            {larger};
        ELSE
            {executed};
        END IF
