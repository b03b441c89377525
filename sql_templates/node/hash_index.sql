-- A retraction finds the copies it removes through this index, not by scanning the
-- history.
CREATE INDEX ON {hist} (argus_hash)
