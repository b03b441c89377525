-- Continuous results that reach the application (argus.subscriptions, issue 53): a
-- subscribed query's net changes, kept per cycle in argus_log.<query> with the cycle's
-- run id as their position, until every named consumer has acknowledged them or they
-- are older than settings.keep_changes; a consumer's acknowledged position is kept
-- here, so that one that crashes resumes where it left off.
CREATE SCHEMA argus_log;
CREATE TABLE argus_catalog.change_logs (
    query_id   bigint PRIMARY KEY REFERENCES argus_catalog.queries ON DELETE CASCADE,
    since      bigint NOT NULL,  -- the log holds the changes after this position only
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE argus_catalog.consumers (
    query_id        bigint NOT NULL REFERENCES argus_catalog.change_logs ON DELETE CASCADE,
    consumer        text NOT NULL CHECK (consumer <> ''),
    position        bigint,  -- every change up to it is acknowledged (NULL: not the answer yet)
    acknowledged_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (query_id, consumer)
);
ALTER TABLE argus_catalog.settings ADD COLUMN keep_changes interval DEFAULT '1 day';
