-- A held-back row that jsonb cannot hold (a string or a value past 256 MB: a helper's
-- 270 MB field failed every cycle at its quarantine) is kept as its record's text.
ALTER TABLE argus_catalog.quarantine ALTER COLUMN row DROP NOT NULL,
    ADD COLUMN row_text text,
    ADD CONSTRAINT quarantine_row_kept CHECK ((row IS NULL) <> (row_text IS NULL));
