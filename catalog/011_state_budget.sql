-- The network's state budget (issue 20): bytes its tables (argus_net) may hold. A new
-- join that would take the network past it is a view of its parents' join (State-
-- Removal); a query whose registration would still take it past is refused. NULL: none.
ALTER TABLE argus_catalog.settings
    ADD COLUMN state_budget bigint CHECK (state_budget IS NULL OR state_budget > 0);
