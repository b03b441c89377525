-- Index a parent history on a join key so that a delta probes it instead of scanning.
CREATE INDEX IF NOT EXISTS {name} ON {hist} ({column})
