-- The argus that last brought the catalog and the network's code up to date, by a hash
-- of its files (argus.lean.fingerprint): a session of the same argus runs a cycle without
-- checking them again nor importing the planner (`argus run` from cron). NULL while an
-- argus's upgrade is under way, or after a catalog's code changed.
ALTER TABLE argus_catalog.program_state ADD COLUMN IF NOT EXISTS source_fingerprint text;
