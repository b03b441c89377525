-- Exact answers under hostile data, and failures that stay small. (Functions and views
-- are in catalog/functions.sql and catalog/views.sql from this version on.)

-- The old views and functions read columns moved below.
DROP VIEW IF EXISTS argus.nodes, argus.index;
DROP FUNCTION IF EXISTS argus_net.cycle_program(bigint);
DROP FUNCTION IF EXISTS argus.assemble_program();  -- now with an argument (catalog/functions.sql)

-- Per-node counters every cycle writes, kept out of the wide catalog rows of
-- argus_catalog.nodes (which a cycle rewrote: 83 MB of dead rows after 5,000 cycles
-- without autovacuum), in a narrow table with room for in-page (HOT) updates.
CREATE TABLE argus_catalog.node_stats (
    node_id        bigint PRIMARY KEY REFERENCES argus_catalog.nodes ON DELETE CASCADE,
    hist_rows      bigint NOT NULL DEFAULT 0,   -- rows in the history, kept by every cycle
    apply_ms_row   double precision,            -- learned ms per change applied
    rebuild_ms_row double precision,            -- learned ms per row a rebuild reads and writes
    horizon        text,            -- rows with horizon_column <= horizon were purged
    horizon_column text             -- the column the consumers' windows bound
) WITH (fillfactor = 50);
INSERT INTO argus_catalog.node_stats (node_id, hist_rows, apply_ms_row, rebuild_ms_row, horizon)
SELECT node_id, hist_rows, apply_ms_row, rebuild_ms_row, horizon FROM argus_catalog.nodes;
ALTER TABLE argus_catalog.nodes
    DROP COLUMN hist_rows, DROP COLUMN apply_ms_row, DROP COLUMN rebuild_ms_row,
    DROP COLUMN horizon,
    -- PL/pgSQL that looks for the row a failed node's expressions fail on
    -- (argus.program.probe_block), run in the node's place after it failed
    ADD COLUMN probe_block text;

-- A query whose node failed is isolated: the others go on.
ALTER TABLE argus_catalog.queries
    ADD COLUMN status text NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'failed')),
    ADD COLUMN error text,           -- the node's error
    ADD COLUMN culprit text,         -- the row it failed on, when one row could be named
    ADD COLUMN failed_run bigint,
    ADD COLUMN failed_node bigint,
    ADD COLUMN failed_at timestamptz;
ALTER TABLE argus_catalog.runs ADD COLUMN isolated text[];  -- queries the cycle isolated

-- Rows held back at the claim: an event time further ahead of the server's clock than
-- max_clock_lead would move the stream clock and expire every window.
CREATE TABLE argus_catalog.quarantine (
    quarantine_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream        text NOT NULL,
    row           jsonb NOT NULL,     -- the row, as its inbox takes it back
    reason        text NOT NULL,
    run_id        bigint,
    held_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX quarantine_stream ON argus_catalog.quarantine (stream);
ALTER TABLE argus_catalog.run_streams ADD COLUMN quarantined bigint NOT NULL DEFAULT 0;

ALTER TABLE argus_catalog.settings
    -- rows whose event time is further ahead of the server's clock are quarantined
    -- (NULL: no limit)
    ADD COLUMN max_clock_lead interval DEFAULT '1 day',
    -- the cycle log keeps the last keep_runs cycles and those of the last keep_runs_for,
    -- whichever are fewer (NULL: no limit of that kind)
    ADD COLUMN keep_runs bigint DEFAULT 10000,
    ADD COLUMN keep_runs_for interval DEFAULT '7 days',
    -- registration refuses a query whose state PostgreSQL estimates above this many
    -- bytes, unless forced (NULL: no limit)
    ADD COLUMN max_query_state bigint DEFAULT 268435456,
    -- md5 of the functions and views argus applied (catalog/functions.sql, views.sql)
    ADD COLUMN catalog_code text;
-- the program is assembled anew, with the cycle program's new signature
UPDATE argus_catalog.settings SET program_frame = NULL, program_stale = true;

-- Event times are finite: 'infinity' would move the stream clock beyond every window.
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT name, time_column FROM argus_catalog.streams WHERE time_column IS NOT NULL LOOP
        EXECUTE format('ALTER TABLE argus_inbox.%I ADD CONSTRAINT argus_finite_time '
                       'CHECK (isfinite(%I)) NOT VALID', s.name, s.time_column);
    END LOOP;
END $$;
