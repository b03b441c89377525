-- A join that was deferred (join/changes.sql) until a consumer needed its delta each
-- cycle: its changes are its delta's rows; its query's changes view still reads here.
CREATE OR REPLACE VIEW {view} AS SELECT {sign}, {columns} FROM {delta}
