-- argus catalog, version 2: the computation index (ARGUS §5.1) that registration
-- searches for what the network already computes.
--
-- Four layers, as relations searched with B-tree indexes: topology (which sources a
-- node joins, in its Standard Table Alias order), PredSets, OR-predicates and literal
-- predicates in canonical form (argus.canon). As in ARGUS's PredIndex, a literal row
-- is shared by every OR-predicate that contains it. Every PredSet is relative to the
-- sources of the node's select-project-join block, so a search never walks a chain of
-- selections or joins (what ARGUS's SVOA/JVOA shortcuts are for; both are recorded).
-- Nodes created before this version are not indexed: they keep working, unshared.

CREATE TABLE argus_catalog.literals (
    literal_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    canonical  text NOT NULL,            -- e.g. "i1"."amount" > 1000000
    lhs        text NOT NULL,            -- the linear left side, STAs as "i1", "i2", …
    shape      text NOT NULL,            -- lhs with the STAs erased: the search prefilter
    op         text NOT NULL,            -- = <> < <= > >=, is null, is not null, true (opaque)
    const_kind text,                     -- num, interval, date, timestamp, str, bool
    const      text,
    terms      jsonb NOT NULL            -- [[atom, coefficient], …]: the literal, rebuilt
);
CREATE UNIQUE INDEX literals_canonical ON argus_catalog.literals (md5(canonical));
CREATE INDEX literals_shape ON argus_catalog.literals (shape);

CREATE TABLE argus_catalog.orpreds (
    orpred_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    canonical text NOT NULL
);
CREATE UNIQUE INDEX orpreds_canonical ON argus_catalog.orpreds (md5(canonical));

CREATE TABLE argus_catalog.orpred_literals (
    orpred_id  bigint NOT NULL REFERENCES argus_catalog.orpreds ON DELETE CASCADE,
    literal_id bigint NOT NULL REFERENCES argus_catalog.literals,
    PRIMARY KEY (orpred_id, literal_id)
);
CREATE INDEX orpred_literals_literal ON argus_catalog.orpred_literals (literal_id);

CREATE TABLE argus_catalog.predsets (
    predset_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    canonical  text NOT NULL             -- '' for the empty PredSet (no condition)
);
CREATE UNIQUE INDEX predsets_canonical ON argus_catalog.predsets (md5(canonical));

CREATE TABLE argus_catalog.predset_orpreds (
    predset_id bigint NOT NULL REFERENCES argus_catalog.predsets ON DELETE CASCADE,
    orpred_id  bigint NOT NULL REFERENCES argus_catalog.orpreds,
    PRIMARY KEY (predset_id, orpred_id)
);
CREATE INDEX predset_orpreds_orpred ON argus_catalog.predset_orpreds (orpred_id);

-- Selection and join nodes (and the sources they read): what each computes.
CREATE TABLE argus_catalog.topology (
    node_id     bigint PRIMARY KEY REFERENCES argus_catalog.nodes ON DELETE CASCADE,
    sources     bigint[] NOT NULL,       -- STA k (column atoms "ik") reads node sources[k]
    sources_key text NOT NULL,           -- the sources sorted: the search key
    predset_id  bigint NOT NULL REFERENCES argus_catalog.predsets,
    dpredset_id bigint REFERENCES argus_catalog.predsets,  -- the condition on its parents
    svoa        bigint,                  -- closest ancestor that is a join or a source
    jvoas       bigint[]                 -- closest join-or-source ancestors of the SVOA
);
CREATE INDEX topology_search ON argus_catalog.topology (sources_key);

-- Which canonical column atom each column of an indexed node holds.
ALTER TABLE argus_catalog.node_columns ADD COLUMN atom text;

-- Aggregates (ARGUS's GroupExpr tables): the input a node groups and by what.
CREATE TABLE argus_catalog.group_topology (
    node_id  bigint PRIMARY KEY REFERENCES argus_catalog.nodes ON DELETE CASCADE,
    input_id bigint NOT NULL REFERENCES argus_catalog.nodes,  -- the rows it aggregates
    width    int NOT NULL,               -- number of group expressions
    rerolled boolean NOT NULL            -- computed from a finer aggregate's groups
);
CREATE INDEX group_topology_input ON argus_catalog.group_topology (input_id);

CREATE TABLE argus_catalog.group_exprs (
    node_id   bigint NOT NULL REFERENCES argus_catalog.group_topology ON DELETE CASCADE,
    position  int NOT NULL,
    canonical text NOT NULL,             -- the group expression over the input's columns
    PRIMARY KEY (node_id, position)
);
CREATE INDEX group_exprs_canonical ON argus_catalog.group_exprs (md5(canonical));

-- Set operations (ARGUS §5.4): the operands of a UNION ALL chain, flattened, or of an
-- INTERSECT, each as 'node id:column,column,…' (the columns it reads, by position).
CREATE TABLE argus_catalog.setop_topology (
    node_id  bigint PRIMARY KEY REFERENCES argus_catalog.nodes ON DELETE CASCADE,
    op       text NOT NULL,
    operands text[] NOT NULL             -- sorted
);
CREATE INDEX setop_topology_operands ON argus_catalog.setop_topology USING gin (operands);

CREATE VIEW argus.index AS
SELECT t.node_id,
       n.kind,
       t.sources,
       p.canonical AS predset,
       d.canonical AS on_parents,
       t.svoa,
       t.jvoas,
       n.hist_rows AS rows
  FROM argus_catalog.topology t
  JOIN argus_catalog.nodes n USING (node_id)
  JOIN argus_catalog.predsets p ON p.predset_id = t.predset_id
  LEFT JOIN argus_catalog.predsets d ON d.predset_id = t.dpredset_id;

-- Cycles with hundreds of nodes. Deltas are cleared with DELETE, and TRUNCATEd only
-- once their file has grown past this many bytes.
ALTER TABLE argus_catalog.settings
    ADD COLUMN truncate_delta_bytes bigint NOT NULL DEFAULT 1048576;

-- A cycle runs many statements over small deltas. Delta tables are never analyzed, so
-- PostgreSQL may estimate them as large and JIT-compile a statement that then takes
-- tens of milliseconds to compile and one to run: no JIT inside cycles (SET jit).
-- One cycle, callable from Python, psql or pg_cron: SELECT argus.run_cycle();
-- Takes the cycle lock (waiting, or returning NULL at once when wait is false), clears
-- the previous cycle's deltas, runs the assembled network program and records what
-- happened. A failure inside the program rolls the program back (claims included) and
-- is recorded as a failed run; the function then returns normally with its run id.
CREATE OR REPLACE FUNCTION argus.run_cycle(wait boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql SET jit = off AS $$
DECLARE
    v_run   bigint;
    v_last  bigint;
    v_error text;
    v_node  bigint;
    v_delta text;
    v_timeout text;
    v_limit bigint := (SELECT truncate_delta_bytes FROM argus_catalog.settings);
BEGIN
    IF wait THEN
        PERFORM pg_advisory_xact_lock(1095911253, 83);  -- argus.names.CYCLE_LOCK
    ELSIF NOT pg_try_advisory_xact_lock(1095911253, 83) THEN
        RAISE NOTICE 'argus: another cycle is running on this database; skipped';
        RETURN NULL;
    END IF;
    SELECT max(run_id) INTO v_last FROM argus_catalog.runs WHERE status = 'ok';
    INSERT INTO argus_catalog.runs (started_at, status)
    VALUES (clock_timestamp(), 'running') RETURNING run_id INTO v_run;
    BEGIN
        -- The previous cycle's changes stop being the last cycle's changes. DELETE is
        -- cheap (a few milliseconds for hundreds of deltas) but leaves dead rows that
        -- autovacuum may not clear between cycles; TRUNCATE costs milliseconds per
        -- table (new files, catalog rows). So DELETE, and TRUNCATE a delta once its
        -- file has grown past settings.truncate_delta_bytes (unless a reader of its
        -- changes view holds it: then DELETE, and next time).
        v_timeout := current_setting('lock_timeout');
        PERFORM set_config('lock_timeout', '50ms', true);
        FOR v_node IN SELECT r.node_id FROM argus_catalog.run_nodes r
                        JOIN argus_catalog.nodes n USING (node_id)
                       WHERE r.run_id = v_last AND r.inserted + r.retracted > 0 LOOP
            v_delta := format('argus_net.%I', 'n' || v_node || '_delta');
            IF pg_relation_size(v_delta::regclass) > v_limit THEN
                BEGIN
                    EXECUTE 'TRUNCATE ' || v_delta;
                EXCEPTION WHEN lock_not_available THEN
                    EXECUTE 'DELETE FROM ' || v_delta;
                END;
            ELSE
                EXECUTE 'DELETE FROM ' || v_delta;
            END IF;
        END LOOP;
        PERFORM set_config('lock_timeout', v_timeout, true);
        PERFORM argus_net.cycle_program(v_run);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
        UPDATE argus_catalog.runs SET status = 'failed', error = v_error,
               finished_at = clock_timestamp() WHERE run_id = v_run;
        RETURN v_run;
    END;

    INSERT INTO argus_catalog.run_queries (run_id, query, inserted, retracted)
    SELECT v_run, q.name, coalesce(r.inserted, 0), coalesce(r.retracted, 0)
      FROM argus_catalog.queries q
      LEFT JOIN argus_catalog.run_nodes r ON r.run_id = v_run AND r.node_id = q.output_node;
    UPDATE argus_catalog.nodes n SET hist_rows = n.hist_rows + r.inserted - r.retracted
      FROM argus_catalog.run_nodes r
     WHERE r.run_id = v_run AND r.node_id = n.node_id AND r.inserted + r.retracted > 0;
    UPDATE argus_catalog.runs SET
           status = 'ok', finished_at = clock_timestamp(), clock = argus.clock_now(),
           rows_in = (SELECT coalesce(sum(rows), 0) FROM argus_catalog.run_streams
                       WHERE run_id = v_run),
           nodes_run = (SELECT count(*) FROM argus_catalog.run_nodes r
                          JOIN argus_catalog.nodes n USING (node_id)
                         WHERE r.run_id = v_run AND n.kind <> 'stream')
     WHERE run_id = v_run;
    DELETE FROM argus_catalog.run_nodes WHERE run_id < v_run - 500;
    RETURN v_run;
END $$;
