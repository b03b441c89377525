-- The fixed costs of a cycle (issue 25). lazy_history_bytes: a stream no query reads
-- keeps its rows in its inbox until its file grows past this, then a cycle appends them
-- to its history in bulk (sql_templates/program/idle_block.sql). NULL (the default): at
-- every cycle, straight into the history.
ALTER TABLE argus_catalog.settings
    ADD COLUMN lazy_history_bytes bigint
        CHECK (lazy_history_bytes IS NULL OR lazy_history_bytes > 0);
