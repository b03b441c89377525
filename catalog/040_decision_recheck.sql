-- A re-plan that found the best tree cheaper only once the windows have turned over
-- (argus.mqo.replan.decide: not yet while they hold rows from before a drift) waited;
-- the query is planned again at run recheck_at, whatever else triggers it
-- (argus.replan_triggered), for at most argus.adapt.records.MAX_WAITS waits in a row.
ALTER TABLE argus_catalog.migrations ADD COLUMN waited boolean NOT NULL DEFAULT false,
                                     ADD COLUMN recheck_at bigint;
CREATE INDEX ON argus_catalog.migrations (recheck_at) WHERE recheck_at IS NOT NULL;
-- The run a query's changes view shows changes after (argus.answers.changes_rows): a
-- migration keeps the last cycle's changes as the view shows them before making them
-- net (argus.adapt.move), not netted twice. NULL: made before this column.
ALTER TABLE argus_catalog.queries ADD COLUMN changes_after bigint;
