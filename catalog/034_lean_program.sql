-- Each node's evaluation and flush code without the plans kept for small deltas
-- (argus.program): a session's first cycle runs argus_net.cycle_program, assembled from
-- these, and its later cycles argus_net.cycle_program_kept, from cycle_block and
-- flush_block. PostgreSQL compiles a program at its first call in a session, and the
-- statements that keep plans were a third of what a cycle run from cron compiled for
-- nothing (it keeps no plan). NULL: the same as the kept block.
ALTER TABLE argus_catalog.nodes ADD COLUMN lean_block text, ADD COLUMN lean_flush_block text;
