-- The fixed costs of a cycle (issue 25): argus.run_queries records the queries whose
-- answer changed, not every query at every cycle. A query whose output reads the clock
-- (`argus_now() - t`) changes whenever the clock moves, whatever its node did.
ALTER TABLE argus_catalog.queries
    ADD COLUMN clock_output boolean NOT NULL DEFAULT false;
