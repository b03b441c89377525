CREATE INDEX ON {hist} (argus_expiry)
