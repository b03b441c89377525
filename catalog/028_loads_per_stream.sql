-- A load id names a load into one stream: the same id into another stream is another
-- load (a writer of one stream could otherwise claim the id of a load into another,
-- which then loaded nothing). Staging tables are per (stream, id) too.
ALTER TABLE argus_catalog.loads DROP CONSTRAINT loads_pkey;
ALTER TABLE argus_catalog.loads ADD PRIMARY KEY (stream, load_id);
ALTER TABLE argus_catalog.staging DROP CONSTRAINT staging_pkey;
ALTER TABLE argus_catalog.staging ADD PRIMARY KEY (stream, load_id);
DROP FUNCTION IF EXISTS argus.count_load(text, bigint), argus.loaded(text),
    argus.drop_staging(text), argus.staging_name(text);

-- A cycle's statements run under a time limit (statement_timeout, set by the client
-- that runs the cycle: argus.cycle.run): past it, the node then running is isolated,
-- its queries marked failed as a failing row marks them, and the cycle, rolled back,
-- runs again without them ('timed_out'). Registrars' requests run under it too.
ALTER TABLE argus_catalog.settings ADD COLUMN node_timeout interval DEFAULT '10 minutes';
ALTER TABLE argus_catalog.runs DROP CONSTRAINT runs_status_check;
ALTER TABLE argus_catalog.runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'ok', 'failed', 'timed_out'));
