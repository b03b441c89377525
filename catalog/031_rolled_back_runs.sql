-- A cycle rolled back by an error it cannot catch itself (a cancel, a lost client,
-- the server shutting down) left no run behind and a gap in the run ids: the client
-- that ran it now records it, in a transaction of its own (argus.record_rollback), as
-- 'rolled_back' with the error.
ALTER TABLE argus_catalog.runs DROP CONSTRAINT runs_status_check;
ALTER TABLE argus_catalog.runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'ok', 'failed', 'timed_out', 'rolled_back'));
