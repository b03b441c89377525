-- A statement whose best plan depends on how many rows its deltas hold: while the
-- node's deltas are small (settings.plan_kept_rows), run with the plan PostgreSQL keeps
-- for the session (planning it at every cycle was ~17% of a small cycle); up to ten
-- times as many, with a second plan kept, made for such deltas (TPC-H's refresh pairs
-- and Nexmark's 5,000-event batches planned every statement at every cycle); otherwise
-- planned for its deltas' sizes at this cycle (EXECUTE). (Each static statement keeps
-- a plan of its own.)
IF {rows} <= argus_plan_kept_rows THEN
            {statement}{into};
        ELSIF {rows} <= argus_plan_kept_more THEN
            {statement}{into};
        ELSE
            {executed};
        END IF
