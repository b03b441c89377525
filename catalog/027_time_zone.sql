-- Event times of type timestamp or date become instants (compared with the stream
-- clock, the horizon, argus_now()) in a time zone: every cycle, registration and
-- migration evaluates in this one (argus.settings.pinned_session), whatever the session
-- that runs it has set. By default the zone of the session that installed argus.
ALTER TABLE argus_catalog.settings ADD COLUMN time_zone text;
UPDATE argus_catalog.settings SET time_zone = current_setting('TimeZone');
ALTER TABLE argus_catalog.settings ALTER COLUMN time_zone SET NOT NULL;

-- Rows held back for a stream that was dropped since stay for the record, never
-- released into a stream re-created under the same name (other columns, other rows).
ALTER TABLE argus_catalog.quarantine ADD COLUMN dropped_at timestamptz;
UPDATE argus_catalog.quarantine SET dropped_at = held_at
 WHERE stream NOT IN (SELECT name FROM argus_catalog.streams);
