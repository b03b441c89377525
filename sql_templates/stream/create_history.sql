-- A stream's history: every claimed row, exactly the declared columns, so that a
-- query's SQL run over argus_streams gives its from-scratch answer.
CREATE TABLE {history} ({column_defs})
