-- What planning a query again cost (argus.adapt.periodic): the periodic check plans a
-- query whose last decision kept its layout only once the cycles since have cost
-- REPLAN_SHARE's inverse times as much (a group of queries sharing joins took 2.6 s on
-- Nexmark and 4.7 s on TPC-H, every other period).
ALTER TABLE argus_catalog.migrations ADD COLUMN plan_ms double precision;
