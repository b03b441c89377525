-- Adapting at run time (issue 21): every reoptimize_every cycles (and on `argus
-- optimize`) each query's joins are planned again on what the cycles observed, and the
-- query is migrated to the new layout between two cycles when it saves more than
-- migration_min_gain of the layout's cost per cycle and pays for its build within
-- migration_horizon cycles. Every decision is logged, with its prediction.
ALTER TABLE argus_catalog.settings
    ADD COLUMN reoptimize_every integer DEFAULT 100
        CHECK (reoptimize_every IS NULL OR reoptimize_every > 0),
    ADD COLUMN migration text NOT NULL DEFAULT 'moving-state',
    ADD COLUMN migration_min_gain float8 NOT NULL DEFAULT 0.3
        CHECK (migration_min_gain >= 0 AND migration_min_gain <= 1),
    ADD COLUMN migration_horizon integer NOT NULL DEFAULT 100 CHECK (migration_horizon > 0);

CREATE TABLE argus_catalog.migrations (
    migration_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    query         text NOT NULL,
    at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    after_run     bigint NOT NULL,      -- the last cycle before it
    strategy      text NOT NULL,
    migrated      boolean NOT NULL,     -- false: decided against, for the reason `why`
    forced        boolean NOT NULL DEFAULT false,
    why           text NOT NULL,
    old_trees     text[],               -- the blocks whose join tree changes
    new_trees     text[],
    predicted_old float8,               -- the order's row operations per cycle
    predicted_new float8,
    build_rows    float8,
    old_nodes     bigint[],             -- the query's own nodes before, and after
    new_nodes     bigint[],
    old_ms        float8,               -- the old nodes' time per cycle, last cycles
    build_ms      float8
);
CREATE INDEX ON argus_catalog.migrations (query, migration_id);

-- How a query was registered to share (argus.mqo.sharing.Sharing): a re-plan keeps to
-- it, and finds its nodes by the same signatures.
ALTER TABLE argus_catalog.queries
    ADD COLUMN sharing text NOT NULL DEFAULT 'selection',
    ADD COLUMN join_sharing boolean NOT NULL DEFAULT true;
