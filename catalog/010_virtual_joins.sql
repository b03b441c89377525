-- The layout of new nodes (issue 20). layout 'heuristic': every node keeps a table of
-- its rows (argus before conditional materialization); 'cost': selections over streams
-- that pass most rows (virtual_selectivity) and inner joins whose answer is large next to
-- their inputs (virtual_join_growth) keep none, their rows are a view.
ALTER TABLE argus_catalog.settings
    ADD COLUMN layout text NOT NULL DEFAULT 'cost' CHECK (layout IN ('heuristic', 'cost')),
    -- an insert-only inner join is a view of its parents' histories when, at
    -- registration, it holds more than this many times its parents' rows together
    ADD COLUMN virtual_join_growth float8 DEFAULT 4
        CHECK (virtual_join_growth IS NULL OR virtual_join_growth > 0);
