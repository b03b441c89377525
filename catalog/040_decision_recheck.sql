-- A re-plan that found the best tree cheaper only once the windows have turned over
-- (argus.mqo.replan.decide: not yet while they hold rows from before a drift) plans the
-- query again at this run, whatever else triggers it (argus.replan_triggered).
ALTER TABLE argus_catalog.migrations ADD COLUMN recheck_at bigint;
CREATE INDEX ON argus_catalog.migrations (recheck_at) WHERE recheck_at IS NOT NULL;
