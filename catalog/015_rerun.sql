-- Re-running as a query's evaluation (issue 25): a query is maintained incrementally
-- by its nodes, or by one node that re-runs it in each cycle that brings its streams
-- rows (argus.nodes.rerun). argus chooses by cost when rerun_fallback is on (at every
-- re-plan, argus.adapt), or the query's owner does (argus evaluate).
ALTER TABLE argus_catalog.queries
    ADD COLUMN evaluate text NOT NULL DEFAULT 'incremental'
        CHECK (evaluate IN ('incremental', 'rerun'));
ALTER TABLE argus_catalog.settings ADD COLUMN rerun_fallback boolean NOT NULL DEFAULT true;
ALTER TABLE argus_catalog.migrations
    ADD COLUMN old_evaluate text,
    ADD COLUMN new_evaluate text;
ALTER TABLE argus_catalog.nodes DROP CONSTRAINT nodes_kind_check,
    ADD CONSTRAINT nodes_kind_check
        CHECK (kind IN ('stream', 'select', 'join', 'aggregate', 'distinct', 'setop', 'rerun'));
