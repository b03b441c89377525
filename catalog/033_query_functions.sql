-- The schema of each function a query calls outside pg_catalog, as registration
-- resolved its calls ({"name": "schema"}): planning the query again (argus.adapt)
-- resolves them the same way, whatever the search_path of whoever re-plans it. NULL:
-- registered before, read from the schema-qualified calls of its canonical text.
ALTER TABLE argus_catalog.queries ADD COLUMN functions jsonb;
