-- argus_changes.<query>: what the last cycle changed (changes.sql, changes_clock.sql).
-- OR REPLACE: a migration (argus.adapt) moves it to new nodes, keeping its grants and
-- the views built on it.
CREATE OR REPLACE VIEW {view} AS {changes}
