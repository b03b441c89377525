-- A load id names a load into one stream: the same id into another stream is another
-- load (a writer of one stream could otherwise claim the id of a load into another,
-- which then loaded nothing). Staging tables are per (stream, id) too.
ALTER TABLE argus_catalog.loads DROP CONSTRAINT loads_pkey;
ALTER TABLE argus_catalog.loads ADD PRIMARY KEY (stream, load_id);
ALTER TABLE argus_catalog.staging DROP CONSTRAINT staging_pkey;
ALTER TABLE argus_catalog.staging ADD PRIMARY KEY (stream, load_id);
DROP FUNCTION IF EXISTS argus.count_load(text, bigint), argus.loaded(text),
    argus.drop_staging(text), argus.staging_name(text);
