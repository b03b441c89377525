-- A named consumer of a query's changes (argus.subscribe) is the role's that made it:
-- only that role (or a member of it) and argus's owner acknowledge or forget it — a
-- reader of the same query moved or deleted another application's (found by a helper).
-- Consumers made before: argus's owner's, until made again.
ALTER TABLE argus_catalog.consumers ADD COLUMN created_by name NOT NULL DEFAULT current_user;
ALTER TABLE argus_catalog.consumers ALTER COLUMN created_by SET DEFAULT session_user;
