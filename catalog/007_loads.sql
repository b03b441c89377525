-- Loads that fail or die leave nothing behind.
--
-- The staging tables of Spark loads (argus_staging), so that the ones a failed or
-- killed load left behind can be swept (argus.sweep_staging) once no live load holds
-- their id.
CREATE TABLE argus_catalog.staging (
    load_id    text PRIMARY KEY,
    stream     text NOT NULL,
    table_name text NOT NULL,            -- in schema argus_staging
    created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE argus_catalog.settings
    -- a staging table this old, which no live load holds, is dropped
    ADD COLUMN stale_staging_after interval NOT NULL DEFAULT '1 hour';
