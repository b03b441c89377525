-- A role's requests are queued one session at a time (argus.request_turn): a lock on
-- its row here, which only argus's functions take. It was an advisory lock keyed by the
-- role's name, which any role that could connect held, and every request of that role
-- then waited (a helper).
CREATE TABLE argus_catalog.request_turns (role name PRIMARY KEY);
