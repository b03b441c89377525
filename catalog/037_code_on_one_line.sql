-- A node's code as the cycle program holds it, each block on one line (argus.one_line;
-- keys cycle, flush, lean, lean_flush, purge), made when the code is stored or changes
-- (argus.code_changed), so that a network change rewrites only its own nodes' code.
ALTER TABLE argus_catalog.nodes ADD COLUMN one_line jsonb;
