-- Never slower than recomputation, per node and per cycle.
--
-- A node's changes (its delta) always come from the incremental rules: they read only
-- the parents' deltas and the materialized histories, so they cost what the changes
-- cost. What can cost more than recomputing is *maintaining the node's history* on
-- the signed path: every changed row is retracted and inserted by value, through its
-- hash, a few microseconds a row. When a cycle changes a large part of a node (a HAVING
-- over an aggregate whose groups all moved, a set operation over small inputs), it is
-- cheaper to rebuild the history from the parents' new histories, with the node's own
-- from-scratch SQL (its backfill). argus.choose_maintenance() decides, node by node,
-- from costs learned by earlier cycles (argus_catalog.nodes.apply_ms_row and
-- rebuild_ms_row, milliseconds per row); `argus explain` shows the choice.

ALTER TABLE argus_catalog.settings
    -- 'auto': the cheaper of the two by the learned costs; 'apply' / 'rebuild': always
    ADD COLUMN maintenance text NOT NULL DEFAULT 'auto'
        CHECK (maintenance IN ('auto', 'apply', 'rebuild')),
    -- The network's tables and indexes are hot in memory during a cycle, where a random
    -- page costs little more than a sequential one; with PostgreSQL's default (4) the
    -- planner scans a whole history rather than probing its index once per delta row.
    -- NULL: the server's setting.
    ADD COLUMN random_page_cost real DEFAULT 1.1,
    -- The version of the node code stored in argus_catalog.nodes (argus.nodes
    -- CODE_VERSION): older code is recompiled when argus connects.
    ADD COLUMN code_version int NOT NULL DEFAULT 0,
    -- A cycle takes an inbox whose file grew past this many bytes whole (locked, read,
    -- truncated) when no load is writing to it, instead of deleting its rows one by one.
    ADD COLUMN truncate_inbox_bytes bigint NOT NULL DEFAULT 262144;

ALTER TABLE argus_catalog.nodes
    ADD COLUMN apply_ms_row double precision,   -- learned ms per change applied
    ADD COLUMN rebuild_ms_row double precision; -- learned ms per row a rebuild reads and writes

ALTER TABLE argus_catalog.run_nodes
    ADD COLUMN flush_ms double precision;       -- maintaining the history (end of cycle)

-- Each cycle's choice for each signed node that changed.
CREATE TABLE argus_catalog.run_maintenance (
    run_id       bigint NOT NULL REFERENCES argus_catalog.runs ON DELETE CASCADE,
    node_id      bigint NOT NULL,
    changes      bigint NOT NULL,   -- rows applying handles: the node's and its parents' deltas
    rebuild_rows bigint NOT NULL,   -- rows rebuilding reads and writes: the parents' and its own
    apply_ms     double precision,  -- predicted (NULL: nothing learned yet)
    rebuild_ms   double precision,
    rebuilt      boolean NOT NULL,
    PRIMARY KEY (run_id, node_id)
);
