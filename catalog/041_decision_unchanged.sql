-- A periodic check that did not plan the query again: what the query's nodes wrote per
-- cycle moved too little since the decision unchanged_since planned it
-- (argus.adapt.records.unchanged). NULL: a decision that planned it.
ALTER TABLE argus_catalog.migrations ADD COLUMN unchanged_since bigint;
