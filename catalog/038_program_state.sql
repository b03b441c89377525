-- What argus keeps about its own code in this database, apart from the settings a user
-- changes (`argus config`): one row, written by argus only.
CREATE TABLE argus_catalog.program_state (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    -- the version of the node code stored in nodes (argus.nodes CODE_VERSION): older
    -- code is recompiled when argus connects
    code_version int NOT NULL DEFAULT 0,
    -- md5 of the functions and views argus applied (catalog/functions.sql, views.sql)
    catalog_code text,
    -- the cycle program is assembled in the database, by the first cycle after the
    -- network changed, from the code each node stored when it was compiled, so that a
    -- cycle started from psql or pg_cron runs the current network: its body around the
    -- nodes' code, with named slots (argus.program.frame, argus.fill_program)
    program_frame text,
    program_stale boolean NOT NULL DEFAULT true,
    -- plans kept for small deltas (settings.plan_kept_rows) are made anew in every
    -- session after this cycle (node_stats.planned_rows)
    plans_reset_run bigint NOT NULL DEFAULT 0
);
INSERT INTO argus_catalog.program_state
       (code_version, catalog_code, program_frame, program_stale, plans_reset_run)
SELECT code_version, catalog_code, program_frame, program_stale, plans_reset_run
  FROM argus_catalog.settings;
ALTER TABLE argus_catalog.settings DROP COLUMN code_version, DROP COLUMN catalog_code,
    DROP COLUMN program_frame, DROP COLUMN program_stale, DROP COLUMN plans_reset_run;
