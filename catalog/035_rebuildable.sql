-- Whether a node may rebuild its history instead of applying a cycle's changes
-- (argus.program.rebuildable: a signed node with a table of its own), decided once in
-- Python when its code is stored, and read by the SQL that chooses (the cycle program)
-- and assembles it. The code of networks stored before is compiled again (CODE_VERSION).
ALTER TABLE argus_catalog.nodes ADD COLUMN rebuildable boolean NOT NULL DEFAULT false;
