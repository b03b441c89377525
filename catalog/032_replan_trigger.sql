-- Zhu's trigger (issue 52): a query whose own joins write far more per row that
-- comes in than after it was last planned is planned again after the cycle that shows
-- it, whatever the period of reoptimize_every (argus.replan_triggered). Its decisions
-- say so: what the joins wrote, now and then.
ALTER TABLE argus_catalog.migrations ADD COLUMN triggered text;
