-- A delete names the key alone: the table's other NOT NULL columns are checked on the
-- rows that insert or update (the constraint's name says which column failed).
ALTER TABLE {inbox} ALTER COLUMN {column} DROP NOT NULL,
    ADD CONSTRAINT {constraint} CHECK (argus_op = 'd' OR {column} IS NOT NULL)
