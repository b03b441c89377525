-- Join order by cost (issue 20, argus.mqo.order). What the order expected of each node
-- it built ({"rows": …, "rate": new rows per cycle}), for `argus explain` to set beside
-- what the cycles measure; and, per query, each select-project-join block's chosen
-- tree with its estimated cost and the best alternatives.
ALTER TABLE argus_catalog.nodes ADD COLUMN estimate jsonb;
ALTER TABLE argus_catalog.queries ADD COLUMN join_orders jsonb;
