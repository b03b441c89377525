-- A node's code as the cycle program holds it, each block on one line (argus.one_line;
-- keys cycle, flush, lean, lean_flush, purge): made when the program is assembled, for
-- the nodes whose code changed since (argus.code_changed sets it NULL), so that a
-- network change rewrites only its own nodes' code.
ALTER TABLE argus_catalog.nodes ADD COLUMN one_line jsonb;
