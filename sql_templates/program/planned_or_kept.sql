-- A statement whose best plan depends on how many rows its deltas hold: while the
-- node's deltas are small (settings.plan_kept_rows), run with the plan PostgreSQL keeps
-- for the session (planning it at every cycle was ~17% of a small cycle); otherwise
-- planned for its deltas' sizes at this cycle (EXECUTE).
IF {small} THEN
            {statement}{into};
        ELSE
            {executed};
        END IF
