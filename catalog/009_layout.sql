-- Conditional materialization (ARGUS's rule): a selection or projection over a stream
-- that passes more than this share of the stream's rows keeps no table of its own; its
-- history and changes are views of the stream's. NULL: every selection keeps its rows.
ALTER TABLE argus_catalog.settings
    ADD COLUMN virtual_selectivity float8 DEFAULT 0.3
        CHECK (virtual_selectivity IS NULL OR virtual_selectivity >= 0);
