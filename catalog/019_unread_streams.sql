-- A stream that no query reads is claimed only when its inbox grew past this many bytes
-- (issue 25): until then its rows wait in the inbox, written once, and move the stream
-- clock when they are claimed. NULL: claimed at every cycle, like any stream.
ALTER TABLE argus_catalog.settings
    ADD COLUMN unread_inbox_bytes bigint DEFAULT 16777216;
