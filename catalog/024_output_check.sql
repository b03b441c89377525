-- A query's own output expressions, computed in its views, are evaluated by each cycle
-- over the rows its top node gained (argus.run_cycle): the statement that does it, or
-- NULL when they are columns only or read the stream clock (registration sets it).
ALTER TABLE argus_catalog.queries ADD COLUMN output_check text;
