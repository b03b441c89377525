-- MIN/MAX under retraction re-read the affected groups of the parent: index them.
CREATE INDEX IF NOT EXISTS {name} ON {parent} ({hash})
