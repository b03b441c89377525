-- JISC migration (issue 21): a migration's new inner joins may start empty and be
-- completed key by key as the cycles probe them (argus.network.lazy). The migration
-- log names them; argus.migrations shows how many are still completing.
ALTER TABLE argus_catalog.migrations ADD COLUMN lazy_nodes bigint[];
