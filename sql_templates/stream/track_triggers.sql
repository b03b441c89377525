-- The source's statement-level triggers (one per event: a trigger with transition
-- tables has one event), fired in replicating sessions too (session_replication_role).
CREATE TRIGGER argus_track_insert AFTER INSERT ON {source}
    REFERENCING NEW TABLE AS argus_new FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER argus_track_update AFTER UPDATE ON {source}
    REFERENCING OLD TABLE AS argus_old NEW TABLE AS argus_new
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER argus_track_delete AFTER DELETE ON {source}
    REFERENCING OLD TABLE AS argus_old FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER argus_track_truncate AFTER TRUNCATE ON {source}
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
ALTER TABLE {source} ENABLE ALWAYS TRIGGER argus_track_insert,
    ENABLE ALWAYS TRIGGER argus_track_update, ENABLE ALWAYS TRIGGER argus_track_delete,
    ENABLE ALWAYS TRIGGER argus_track_truncate
