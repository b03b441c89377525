-- The cycle program is assembled in the database, by the first cycle after the network
-- changed, from the code each node stored when it was compiled. A change (registering,
-- dropping a query or a stream) compiles and validates only its own nodes' code and
-- marks the program stale, so that registering query number N costs what query N
-- needs, not a rewrite of the code of the N-1 queries before it; and a cycle started
-- from psql or pg_cron runs the current network all the same.

ALTER TABLE argus_catalog.settings
    -- cycle_program's body around the nodes' code, with format() placeholders for the
    -- declarations, evaluation blocks, whether any node is signed, flush blocks and
    -- purges (argus.program.frame; it depends on the streams only)
    ADD COLUMN program_frame text,
    ADD COLUMN program_stale boolean NOT NULL DEFAULT true;

ALTER TABLE argus_catalog.nodes
    -- the node's purge code (argus.nodes.purge.purge_block), recomputed whenever the
    -- network changes, since it depends on the node's consumers
    ADD COLUMN purge_block text;
