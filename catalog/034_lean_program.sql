-- Each node's evaluation and flush code for the program a session's first cycle runs
-- (argus_net.cycle_program; argus.program.Statements): without the statements that keep
-- plans for small deltas, and with its statements' texts apart (lean_sql, read when the
-- program starts). Its later cycles run argus_net.cycle_program_kept, assembled from
-- cycle_block and flush_block. PostgreSQL compiles a program whole at its first call in
-- a session, and a cycle run from cron, its session's only one, keeps no plan.
ALTER TABLE argus_catalog.nodes ADD COLUMN lean_block text, ADD COLUMN lean_flush_block text,
                                ADD COLUMN lean_sql jsonb;
