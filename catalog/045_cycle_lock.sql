-- The cycle lock (argus.names.LOCK_CYCLES): a lock on this table, which only argus's
-- owner may take. It was an advisory lock, which any role that could connect held
-- (a helper: every cycle and registration waited for as long as its session lived).
CREATE TABLE argus_catalog.cycle_lock ();
