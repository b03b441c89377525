-- argus's functions, as they are now: re-applied (CREATE OR REPLACE) after the numbered
-- migrations whenever this file changes (argus.catalog), so that the current cycle can
-- be read in one place. Node code calls only functions of the argus schema.

-- The stream clock: the largest event time claimed so far (argus_catalog.clock).
CREATE OR REPLACE FUNCTION argus.clock_now() RETURNS timestamptz
LANGUAGE sql STABLE AS $$ SELECT now FROM argus_catalog.clock $$;
CREATE OR REPLACE FUNCTION argus.clock_previous() RETURNS timestamptz
LANGUAGE sql STABLE AS $$ SELECT previous FROM argus_catalog.clock $$;

-- Each node's delta table as the planner's statistics see it: rows per page
-- (pg_class.reltuples / relpages), indexed by node id (NULL: no delta table); read once
-- a cycle, so that a node's check whether to ANALYZE its delta needs no query
-- (program/analyze_delta). A table of no density (analyzed while empty: relpages 0) is
-- filled, as PostgreSQL's table_block_relation_estimate_size reckons, with rows of the
-- row's width: the page's space over the tuple header and line pointer plus each
-- column's average width an ANALYZE measured, which a TRUNCATE keeps (read only for such
-- a table), else its fixed length, or its length modifier's (char(n), varchar(n),
-- numeric(p, s)) as get_typavgwidth takes it, or 32 bytes. One never analyzed or
-- TRUNCATEd (reltuples -1) is filled so too, but at least 10 pages of it: negative.
-- PL/pgSQL, not SQL: a SQL function with a SET clause is planned again at every call
-- (a measurable share of a small cycle: docs/performance.md, fixed costs); PL/pgSQL
-- plans its statement once a session.
CREATE OR REPLACE FUNCTION argus.delta_estimates() RETURNS real[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (
    WITH e AS (SELECT pg_encoding_max_length(encoding) AS most FROM pg_database
                WHERE datname = current_database())
    SELECT coalesce(array_agg(CASE WHEN c.reltuples >= 0 AND c.relpages > 0
                                   THEN c.reltuples / c.relpages
                                   ELSE sign(c.reltuples + 0.5)
                                        * (8168 / (28 + coalesce(m.width, t.width)))
                              END ORDER BY g), '{}')
      FROM generate_series(1, (SELECT max(node_id) FROM argus_catalog.nodes)) AS g
      LEFT JOIN pg_class c ON c.relname = 'n' || g || '_delta'
                          AND c.relnamespace = 'argus_net'::regnamespace
      LEFT JOIN LATERAL (
          SELECT sum(CASE WHEN a.attlen > 0 THEN a.attlen
                          WHEN w.most IS NULL OR w.most <= 0 THEN 32
                          WHEN a.atttypid = 'bpchar'::regtype OR w.most <= 32 THEN w.most
                          WHEN w.most < 1000 THEN 32 + (w.most - 32) / 2
                          ELSE 516 END)::integer AS width, count(*) AS columns
            FROM pg_attribute a
           CROSS JOIN LATERAL (
               SELECT CASE WHEN a.atttypmod < 4 THEN NULL
                           WHEN a.atttypid IN ('bpchar'::regtype, 'varchar'::regtype)
                           THEN (a.atttypmod - 4) * (SELECT most FROM e) + 4
                           WHEN a.atttypid = 'numeric'::regtype
                           THEN 8 + 2 * (((((a.atttypmod - 4) >> 16) & 65535) + 6) / 4)
                      END AS most) AS w
           WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
             AND NOT (c.reltuples >= 0 AND c.relpages > 0)) AS t ON true
      LEFT JOIN LATERAL (
          SELECT sum(st.avg_width)::integer AS width FROM pg_stats st
           WHERE c.reltuples < 0 AND st.schemaname = 'argus_net' AND st.tablename = c.relname
             AND NOT st.inherited
          HAVING count(*) = t.columns) AS m ON true);
END $$;

-- Each node's history rows (node_stats.hist_rows), indexed by node id: read once a
-- cycle, so that a join's term can choose without a query whether its delta probes the
-- other side's history by index (nodes/join: PROBE_RATIO).
CREATE OR REPLACE FUNCTION argus.history_rows() RETURNS real[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(s.hist_rows::real ORDER BY g), '{}')
              FROM generate_series(1, (SELECT max(node_id) FROM argus_catalog.nodes)) AS g
              LEFT JOIN argus_catalog.node_stats s ON s.node_id = g);
END $$;

-- Would the planner misjudge a delta's rows (program/analyze_delta)? Its rows per page
-- as argus.delta_estimates read them (negative: never analyzed, the planner fills at
-- least 10 pages), times the pages it has now, against the rows the node wrote: over 3
-- times and 300 more, or, for a delta that holds rows, over 10 times and 10 more (a
-- tracked table's small first load once made a 1-row change look 25 times larger, and
-- a join hashed a whole history instead of probing it). misjudged is PL/pgSQL, called:
-- inlined as SQL, each of the program's call sites parsed both functions' text when first
-- planned (in every session's first cycle: every cycle run from cron) and again whenever
-- its delta was analyzed or truncated (its name, a regclass constant, tied the plan to
-- the table); a call costs no more than the inlined expression did (docs/performance.md,
-- seventh session). No SET clause (the program calls it at every node), so every operator
-- is pg_catalog's by name: called with another search_path, an operator of an exact type
-- pg_catalog lacks (>(float8, bigint)) would be found elsewhere first.
CREATE OR REPLACE FUNCTION argus.planned_rows(p_est real, p_delta regclass)
RETURNS float8 LANGUAGE sql AS $$
    SELECT CASE WHEN (pg_catalog.pg_relation_size(p_delta) OPERATOR(pg_catalog.=) 0::bigint)
                THEN 0::float8
                WHEN (p_est OPERATOR(pg_catalog.<) 0::real)
                THEN ((OPERATOR(pg_catalog.-) p_est::float8) OPERATOR(pg_catalog.*)
                      greatest((pg_catalog.pg_relation_size(p_delta) OPERATOR(pg_catalog./)
                                8192::bigint), 10::bigint)::float8)
                ELSE (p_est::float8 OPERATOR(pg_catalog.*)
                      (pg_catalog.pg_relation_size(p_delta) OPERATOR(pg_catalog./)
                       8192::bigint)::float8)
           END
$$;
CREATE OR REPLACE FUNCTION argus.misjudged(p_est real, p_delta regclass, p_rows bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_planned float8;
BEGIN
    IF p_est IS NULL THEN
        RETURN false;
    END IF;
    v_planned := argus.planned_rows(p_est, p_delta);
    RETURN v_planned OPERATOR(pg_catalog.>)
               CASE WHEN p_rows OPERATOR(pg_catalog.>) 0::bigint
                    THEN least((3::bigint OPERATOR(pg_catalog.*) p_rows)
                               OPERATOR(pg_catalog.+) 300::bigint,
                               (10::bigint OPERATOR(pg_catalog.*) p_rows)
                               OPERATOR(pg_catalog.+) 10::bigint)
                    ELSE 300::bigint END::float8
           OR (p_est OPERATOR(pg_catalog.>=) 0::real)
              AND (p_rows OPERATOR(pg_catalog.>) 200::bigint)
              AND (v_planned OPERATOR(pg_catalog.<)
                   (p_rows::float8 OPERATOR(pg_catalog./) 4::float8));
END $$;

-- A sign of life on long cycles: a node that took more than a second says so as the
-- cycle runs (program/node_block, flush_block). Called only then.
CREATE OR REPLACE FUNCTION argus.slow_node(p_node bigint, p_kind text, p_ms float8,
                                           p_changes bigint DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_changes IS NULL THEN
        RAISE NOTICE 'argus: node % (%) maintained its history in % s', p_node, p_kind,
            round(p_ms::numeric / 1000, 1);
    ELSE
        RAISE NOTICE 'argus: node % (%) computed % changes in % s', p_node, p_kind, p_changes,
            round(p_ms::numeric / 1000, 1);
    END IF;
END $$;

-- The rows one statement derives where no estimate bounds them (a recursion, a
-- set-returning function of the data, a re-run's answer), against the bound its node
-- was built with (max_query_state over the row's width, argus.nodes.base.bounded): past
-- it the statement fails, and the cycle isolates the queries that read the node.
CREATE OR REPLACE FUNCTION argus.within_bound(p_rows bigint, p_bound bigint) RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_rows > p_bound THEN
        RAISE EXCEPTION 'one statement derived more than % rows (a recursion, or a '
                        'set-returning function of the data such as generate_series), more '
                        'than max_query_state holds', p_bound
            USING HINT = 'narrow the query, raise max_query_state (argus config), or '
                         'have the owner register the query with --force';
    END IF;
    RETURN true;
END $$;

-- argus_now(), as queries are written (and as psql users run them from scratch). Node
-- code calls argus.clock_now() instead, which does not depend on the search_path.
-- Created once: an upgrade runs as argus's owner role, which may neither create in
-- public (PostgreSQL 15's default) nor replace the function the installer made.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public') THEN
        IF to_regprocedure('public.argus_now()') IS NULL
           AND has_schema_privilege(current_user, 'public', 'CREATE') THEN
            CREATE FUNCTION public.argus_now() RETURNS timestamptz
            LANGUAGE sql STABLE AS 'SELECT now FROM argus_catalog.clock';
        END IF;
    END IF;
END $$;
CREATE OR REPLACE FUNCTION argus.argus_now() RETURNS timestamptz
LANGUAGE sql STABLE AS $$ SELECT now FROM argus_catalog.clock $$;

-- sqrt(v) rounded at v's scale, as PostgreSQL's stddev of integers and numerics
-- computes it (numeric_stddev_internal: sqrt_var at the variance's scale). sqrt()
-- rounds at a scale of its own, and rounding that again at v's scale turned some
-- halves (109904475403.4999…) up.
-- No SET clause (inlined), so every operator and function is pg_catalog's by name: its
-- body is parsed where it runs, and `u / 2` would take a /(numeric, integer) of the
-- reader's search_path first.
CREATE OR REPLACE FUNCTION argus.numeric_sqrt(v numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT pg_catalog.round(
               CASE WHEN ((r OPERATOR(pg_catalog.+) h) OPERATOR(pg_catalog.*)
                          (r OPERATOR(pg_catalog.+) h)) OPERATOR(pg_catalog.<=) v
                    THEN r OPERATOR(pg_catalog.+) u ELSE r END, pg_catalog.scale(v))
      FROM (SELECT CASE WHEN (t OPERATOR(pg_catalog.*) t) OPERATOR(pg_catalog.>) v
                        THEN t OPERATOR(pg_catalog.-) u ELSE t END AS r, u,
                   u OPERATOR(pg_catalog./) 2::numeric AS h
              FROM (SELECT pg_catalog.trunc(pg_catalog.sqrt(v), pg_catalog.scale(v)) AS t,
                           1::numeric OPERATOR(pg_catalog./) (10::numeric OPERATOR(pg_catalog.^)
                               pg_catalog.scale(v)::numeric) AS u) AS a
           ) AS b
$$;

-- Whether an error is the server's (a connection, a transaction's state, a lock or a
-- deadlock, resources, a cancel, the system, PL/pgSQL's internals) rather than the rows':
-- such an error fails the cycle whole instead of isolating a query.
CREATE OR REPLACE FUNCTION argus.server_error(state text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT left(state, 2) IN ('08', '25', '40', '53', '55', '57', '58', 'F0', 'XX')
$$;

-- `value` when a scalar subquery returned `n` rows (argus.frontend.scalar: one without
-- an aggregate, its rows counted per outer row), PostgreSQL's error when several, as
-- running the query again would raise it.
CREATE OR REPLACE FUNCTION argus.one_row(n bigint, value anyelement) RETURNS anyelement
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF n > 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'cardinality_violation',
            MESSAGE = 'more than one row returned by a subquery used as an expression';
    END IF;
    RETURN value;
END $$;

-- Every node has a row of counters (argus_catalog.node_stats).
CREATE OR REPLACE FUNCTION argus.node_stats_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO argus_catalog.node_stats (node_id) VALUES (NEW.node_id);
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER node_stats_row AFTER INSERT ON argus_catalog.nodes
FOR EACH ROW EXECUTE FUNCTION argus.node_stats_row();

-- Nodes a cycle leaves out: those no query that is working uses (a query whose node
-- failed is isolated with every node only failed queries use). Streams always run. A
-- node made earlier in the registration under way is one too: a self-join's equal
-- selections are two nodes (offered again, one node under both sides of a join lost
-- rows on Citus, in two tests over sharded streams; why is not known yet).
CREATE OR REPLACE FUNCTION argus.excluded_nodes() RETURNS TABLE (node_id bigint)
LANGUAGE sql STABLE AS $$
    SELECT n.node_id FROM argus_catalog.nodes n
     WHERE n.kind <> ALL(argus.kinds('loaded'))
       AND NOT EXISTS (SELECT 1 FROM argus_catalog.query_nodes qn
                         JOIN argus_catalog.queries q USING (query_id)
                        WHERE qn.node_id = n.node_id AND q.status = 'ok')
$$;

-- Whether a type's values hash (hash joins, hash indexes, hash_record_extended of a row
-- holding them): it has a default hash opclass, directly or by binary coercion; an
-- array, a domain, a range or a composite type if what it holds does (money and bit
-- compare for equality but do not hash, and neither do arrays of them: a helper's
-- money[] key passed the check, then failed every insert into its hash index).
CREATE OR REPLACE FUNCTION argus.hashable(p_type oid) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        WHEN t.typtype = 'd' THEN argus.hashable(t.typbasetype)
        WHEN t.typcategory = 'A' AND t.typelem <> 0 THEN argus.hashable(t.typelem)
        WHEN t.typtype = 'r' THEN argus.hashable((SELECT r.rngsubtype FROM pg_range r
                                                   WHERE r.rngtypid = t.oid))
        WHEN t.typtype = 'c' THEN NOT EXISTS (
            SELECT FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0
               AND NOT a.attisdropped AND NOT argus.hashable(a.atttypid))
        ELSE EXISTS (SELECT 1 FROM pg_opclass oc JOIN pg_am am ON am.oid = oc.opcmethod
                      WHERE am.amname = 'hash' AND oc.opcdefault
                        AND oc.opcintype IN (t.oid,
                            CASE WHEN t.typtype = 'e' THEN 'anyenum'::regtype END))
             OR EXISTS (SELECT 1 FROM pg_opclass oc JOIN pg_am am ON am.oid = oc.opcmethod
                          JOIN pg_cast c ON c.castsource = t.oid
                                        AND c.casttarget = oc.opcintype AND c.castmethod = 'b'
                         WHERE am.amname = 'hash' AND oc.opcdefault) END
      FROM pg_type t WHERE t.oid = p_type
$$;

-- How to index p_table for equality probes on p_columns, led by the first: a B-tree on
-- the leading columns whose every value fits one of its entries, else a hash index on
-- the first (an entry holds the value's 4-byte hash); 'none' where the first neither
-- fits nor hashes. A B-tree entry is at most a third of a page (~2,700 bytes): a longer
-- key (a long text, a large array or bit string) failed the insert into the table it
-- indexes, on a stream's history every cycle (a helper's attack).
CREATE OR REPLACE FUNCTION argus.probe_index_shape(p_table regclass, p_columns text[],
                                                   OUT method text, OUT columns text[])
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH c AS (
        SELECT k.ord, k.name, a.atttypid, b.typlen > 0
                   OR b.typname IN ('inet', 'cidr')
                   OR b.typname IN ('varchar', 'bpchar') AND a.atttypmod BETWEEN 5 AND 504
                   OR b.typname = 'numeric' AND a.atttypmod >= 0  -- (1,000 digits at most)
                   OR b.typname IN ('bit', 'varbit') AND a.atttypmod BETWEEN 1 AND 16000
                   AS fits
          FROM unnest(p_columns) WITH ORDINALITY AS k(name, ord)
          JOIN pg_attribute a ON a.attrelid = p_table AND a.attname = k.name
          JOIN pg_type t ON t.oid = a.atttypid
          JOIN pg_type b ON b.oid = coalesce(nullif(t.typbasetype, 0), t.oid)),
    wide AS (SELECT c.* FROM c WHERE c.ord = 1 AND NOT c.fits)
    SELECT CASE WHEN argus.hashable(wide.atttypid) THEN 'hash' ELSE 'none' END,
           ARRAY[wide.name] FROM wide
    UNION ALL
    SELECT 'btree', array_agg(c.name ORDER BY c.ord) FILTER (
               WHERE c.ord < coalesce((SELECT min(w.ord) FROM c AS w WHERE NOT w.fits),
                                      cardinality(p_columns) + 1))
      FROM c WHERE NOT EXISTS (SELECT FROM wide)
$$;

-- An index on p_table for equality probes on p_columns (argus.probe_index_shape), named
-- p_name (NULL: PostgreSQL names it); refused where its first column can have none.
CREATE OR REPLACE FUNCTION argus.probe_index(p_table regclass, p_columns text[],
                                             p_name text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_shape record := argus.probe_index_shape(p_table, p_columns);
BEGIN
    IF v_shape.method = 'none' THEN
        RAISE EXCEPTION 'a join or partition key of type % (column %): its values may '
                        'be too long for a B-tree index, and PostgreSQL cannot hash them',
                        (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
                          WHERE a.attrelid = p_table AND a.attname = p_columns[1]),
                        p_columns[1]
              USING ERRCODE = 'feature_not_supported',
                    HINT = 'cast the key to a type that hashes, such as text';
    END IF;
    EXECUTE format('CREATE INDEX %s ON %s USING %s (%s)', coalesce(quote_ident(p_name), ''),
                   p_table, v_shape.method,
                   (SELECT string_agg(quote_ident(c), ', ') FROM unnest(v_shape.columns) AS c));
END $$;

-- A node's block of PL/pgSQL on one line: comments dropped, line breaks outside literals
-- made spaces, a literal's written as \n in an E'' literal. PostgreSQL finds a compound
-- statement's line number when it has read to its END, by a scan from the top of the
-- function whenever the statement began on an earlier line than the last one it looked
-- up: a program of blocks over many lines compiles in time quadratic in its size
-- (docs/performance.md). A block with a backslash, a dollar, a /* comment or two
-- literals a line break apart is left as it is.
CREATE OR REPLACE FUNCTION argus.one_line(code text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $f$
    SELECT CASE WHEN code ~ E'[$\\\\]' OR strpos(code, '/*') > 0
                     -- two literals a line break apart are one ('a'<newline>'b' is 'ab')
                     OR code ~ $r$'([[:space:]]|--[^\n]*)*\n([[:space:]]|--[^\n]*)*'$r$
                THEN code ELSE (
        SELECT coalesce(string_agg(CASE WHEN left(t, 2) = '--' THEN ''
                                        WHEN left(t, 1) = '''' THEN
                                             CASE WHEN strpos(t, E'\n') = 0 THEN t
                                                  WHEN prior ~ '[[:alnum:]_&]$' THEN t
                                                  ELSE 'E' || replace(t, E'\n', E'\\n') END
                                        WHEN left(t, 1) = '"' THEN t
                                        ELSE translate(t, E'\n', ' ') END, '' ORDER BY i), '')
          FROM (SELECT m[1] AS t, i, lag(m[1]) OVER (ORDER BY i) AS prior
                  FROM regexp_matches(code, $r$('(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|[^'"-]+|-)$r$,
                                      'g') WITH ORDINALITY AS x(m, i)) AS tokens) END
$f$;

-- A node's code as the program holds it (argus_catalog.nodes.one_line, catalog/schema.sql):
-- made when its code is stored or changes, so that assembling a program rewrites no
-- node's, and no cycle writes the node rows.
CREATE OR REPLACE FUNCTION argus.code_on_one_line(n argus_catalog.nodes) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT jsonb_build_object(
        'cycle', argus.one_line(n.cycle_block), 'flush', argus.one_line(n.flush_block),
        'lean', argus.one_line(coalesce(n.lean_block, n.cycle_block)),
        'lean_flush', argus.one_line(coalesce(n.lean_flush_block, n.flush_block)),
        'purge', argus.one_line(n.purge_block))
$$;
CREATE OR REPLACE FUNCTION argus.code_changed() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'INSERT'
       OR (NEW.cycle_block, NEW.flush_block, NEW.lean_block, NEW.lean_flush_block,
           NEW.purge_block) IS DISTINCT FROM (OLD.cycle_block, OLD.flush_block, OLD.lean_block,
                                              OLD.lean_flush_block, OLD.purge_block) THEN
        NEW.one_line := argus.code_on_one_line(NEW);
    END IF;
    RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER code_changed
BEFORE INSERT OR UPDATE OF cycle_block, flush_block, lean_block, lean_flush_block, purge_block
ON argus_catalog.nodes FOR EACH ROW EXECUTE FUNCTION argus.code_changed();

-- The program's frame (argus.program.frame) filled: its slots, named as
-- argus.program_slots() lists them (generated from argus.program.SLOTS), are format()'s
-- positional arguments, so that no node's code is read again for a slot's mark.
CREATE OR REPLACE FUNCTION argus.fill_program(frame text, slots jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_names text[] := argus.program_slots();
    v_missing text[] := ARRAY(SELECT n FROM unnest(v_names) AS n WHERE NOT slots ? n);
BEGIN
    IF cardinality(v_missing) > 0 OR (SELECT count(*) FROM jsonb_object_keys(slots))
                                     <> cardinality(v_names) THEN
        RAISE EXCEPTION 'argus: the cycle program''s slots are %, given %', v_names,
              ARRAY(SELECT jsonb_object_keys(slots));
    END IF;
    RETURN format(frame, VARIADIC ARRAY(SELECT slots ->> n FROM unnest(v_names)
                                                         WITH ORDINALITY AS u(n, i)
                                        ORDER BY i));
END $$;

-- The cycle program is assembled in the database, by the first cycle after the network
-- changed, from the code each node stored when it was compiled (argus.program): a
-- change compiles and validates only its own nodes' code, so that registering query
-- number N costs what query N needs, and a cycle started from psql or pg_cron runs the
-- current network all the same. Nodes only failed queries use are left out; `diagnose`
-- is a failed node whose probe (argus.program.probe_block: which row its expressions
-- fail on) runs in its place.
CREATE OR REPLACE FUNCTION argus.assemble_program(diagnose bigint DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET check_function_bodies = off SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_frame text := (SELECT program_frame FROM argus_catalog.program_state);
    v_kept  boolean;
    v_body  text;
    v_outputs jsonb;
    v_clock_outputs jsonb;
BEGIN
    IF v_frame IS NULL OR strpos(v_frame, format('%%%s$s', cardinality(argus.program_slots()))) = 0
    THEN
        RAISE EXCEPTION 'argus: this network''s code was compiled by an older argus'
              USING HINT = 'run any argus command (e.g. argus status): it recompiles on connect';
    END IF;
    -- which working queries each output node answers, for the cycle's report (a
    -- trigger on argus_catalog.queries has the program assembled again when it changes);
    -- under 'd', by node, those whose output is a deferred join that node is a parent of
    -- (no cycle computes their changes: when the parent changed, they may have changed)
    SELECT coalesce(jsonb_object_agg(output_node, names) FILTER (WHERE NOT clock_output), '{}')
           || (SELECT CASE WHEN count(*) > 0
                           THEN jsonb_build_object('d', jsonb_object_agg(parent_id, names))
                           ELSE '{}' END
                 FROM (SELECT e.parent_id, jsonb_agg(DISTINCT q.name) AS names
                         FROM argus_catalog.queries q
                         JOIN argus_catalog.nodes n ON n.node_id = q.output_node
                         JOIN argus_catalog.edges e ON e.child_id = n.node_id
                        WHERE q.status = 'ok' AND (n.layout->>'deferred')::boolean
                        GROUP BY e.parent_id) AS d),
           coalesce(jsonb_object_agg(output_node, names) FILTER (WHERE clock_output), '{}')
      INTO v_outputs, v_clock_outputs
      FROM (SELECT output_node, clock_output, jsonb_agg(name ORDER BY name) AS names
              FROM argus_catalog.queries WHERE status = 'ok'
             GROUP BY output_node, clock_output) AS q;
    -- Two programs of the same nodes: cycle_program, which a session's first cycle runs
    -- (from cron, its only one), plans every statement for its deltas; cycle_program_kept,
    -- which its later cycles run, keeps plans for small deltas (program/planned_or_kept).
    -- PostgreSQL compiles a program at its first call in a session: one that keeps no
    -- plan need not compile the statements that keep them. A diagnosis (a node's probe
    -- instead of its code) makes the first alone, and leaves both to be made again.
    FOREACH v_kept IN ARRAY CASE WHEN diagnose IS NULL THEN ARRAY[false, true]
                                 ELSE ARRAY[false] END LOOP
        WITH n AS (
            SELECT n.*, n.node_id IN (SELECT node_id FROM argus.excluded_nodes()) AS excluded,
                   n.one_line ->> CASE WHEN v_kept THEN 'cycle' ELSE 'lean' END AS code,
                   n.one_line ->> CASE WHEN v_kept THEN 'flush' ELSE 'lean_flush' END
                       AS flush_code,
                   n.one_line ->> 'purge' AS purge_code
              FROM argus_catalog.nodes n
        )
        SELECT argus.fill_program(v_frame, jsonb_build_object(
            -- argus.program.written; the lean program's statements (argus.program.Statements)
            'declarations',
            CASE WHEN count(*) = 0 THEN '    argus_written bigint[];'
                 ELSE format('    argus_written bigint[] := array_fill(0::bigint, '
                             'ARRAY[%s], ARRAY[%s]);', max(node_id) - min(node_id) + 1,
                             min(node_id)) END
            || CASE WHEN v_kept THEN '' ELSE E'\n    argus_sql jsonb := (SELECT '
                    'coalesce(jsonb_object_agg(node_id, lean_sql), ''{}'') FROM '
                    'argus_catalog.nodes WHERE lean_sql IS NOT NULL);' END,
            'evaluate',
            coalesce(string_agg(CASE WHEN node_id = diagnose THEN argus.one_line(probe_block)
                                     WHEN NOT excluded THEN code END, E'\n'
                                ORDER BY join_level, sequence_id, node_id), ''),
            'signed', coalesce(bool_or(rebuildable AND NOT excluded), false)::text,
            'flush',
            coalesce(string_agg(flush_code, E'\n' ORDER BY join_level, sequence_id, node_id)
                     FILTER (WHERE NOT excluded), ''),
            'purge',
            coalesce(string_agg(purge_code, E'\n'
                                ORDER BY join_level, sequence_id, node_id)
                     FILTER (WHERE NOT excluded), ''),
            -- every node's delta the last cycle filled, emptied (a virtual selection's is
            -- a view)
            'clear',
            coalesce(string_agg(format('        IF argus_dirty ? %L THEN DELETE FROM '
                                       'argus_net.%I; END IF;', node_id,
                                       'n' || node_id || '_delta'), E'\n' ORDER BY node_id)
                     FILTER (WHERE NOT (kind = ANY(argus.kinds('selects'))
                                    AND layout ? 'virtual')), ''),
            'outputs', quote_literal(v_outputs),
            'clock_outputs', quote_literal(v_clock_outputs)))
          INTO v_body FROM n;
        -- replaced in place: a new function each time would leave each old one's compiled
        -- code and plans in the sessions that ran it
        EXECUTE format('CREATE OR REPLACE FUNCTION argus_net.%I(argus_run bigint, '
                       'argus_dirty jsonb, argus_settings argus_catalog.settings, '
                       'OUT failed_node bigint, OUT failed_state text, OUT failed_error text, '
                       'OUT culprit text, OUT nodes_run bigint, OUT outputs jsonb, '
                       'OUT clock_outputs jsonb) LANGUAGE plpgsql AS %L',
                       CASE WHEN v_kept THEN 'cycle_program_kept' ELSE 'cycle_program' END,
                       v_body);
    END LOOP;
    UPDATE argus_catalog.program_state SET program_stale = diagnose IS NOT NULL;
END $$;

-- The program names the working queries of each output node (argus.assemble_program):
-- any change to which queries work, or to what answers them, assembles it again.
CREATE OR REPLACE FUNCTION argus.queries_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE argus_catalog.program_state SET program_stale = true WHERE NOT program_stale;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER queries_changed
AFTER INSERT OR DELETE OR UPDATE OF name, status, output_node, clock_output
ON argus_catalog.queries FOR EACH STATEMENT EXECUTE FUNCTION argus.queries_changed();

-- A node of the program failed (cycle_program caught the error of a statement of its
-- own): isolate every query that uses it, with the error; they stay as they were until
-- `argus retry`. Returns their names.
CREATE OR REPLACE FUNCTION argus.isolate(p_run bigint, p_node bigint, p_state text,
                                         p_error text)
RETURNS text[] LANGUAGE sql AS $$
    WITH isolated AS (
        UPDATE argus_catalog.queries q
           SET status = 'failed', failed_run = p_run, failed_node = p_node,
               failed_at = now(), culprit = NULL,
               error = format('%s (SQLSTATE %s, in node %s)', p_error, p_state, p_node)
         WHERE q.status = 'ok'
           AND q.query_id IN (SELECT qn.query_id FROM argus_catalog.query_nodes qn
                               WHERE qn.node_id = p_node)
        RETURNING q.name
    )
    SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM isolated
$$;

-- One cycle, callable from Python, psql or pg_cron: SELECT argus.run_cycle();
-- Takes the cycle lock (waiting, or returning NULL at once when wait is false), clears
-- the previous cycle's deltas, runs the assembled network program and records what
-- happened, in one transaction.
--
-- A failure stays small. When a statement of a node fails (a row it cannot compute, a
-- division by zero, a cast), the program rolls itself back, claims included, and says
-- which node; the queries using that node are isolated (argus.isolate), the program is
-- assembled without the nodes only they use and with the failed node's probe, and the
-- cycle runs again: the other queries go on and stay exact, the failed ones keep their
-- inputs in the histories, and the probe names the row. Any other failure (the server,
-- a lock, a stream's own code) rolls the cycle back whole and is recorded as a failed
-- run; the function then returns normally with its run id.
--
-- It runs as the owner of argus's objects (SECURITY DEFINER), whoever calls it (a
-- writer may), and never through the caller's search_path: the code it runs was written
-- by the owner's processes only.
CREATE OR REPLACE FUNCTION argus.run_cycle(wait boolean DEFAULT false) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET jit = off SET extra_float_digits = 1
SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres' SET bytea_output = 'hex'
SET TimeZone = 'UTC'  -- then settings.time_zone; the caller's zone comes back on exit
SET search_path = pg_catalog, pg_temp
-- how the code it runs is parsed: with standard_conforming_strings off, a literal
-- ending in a backslash ran on into the node's SQL, which a registrar could write
-- (found by a helper), and transform_null_equals would turn `x = NULL` into `x IS NULL`
SET standard_conforming_strings = on SET transform_null_equals = off SET array_nulls = on
-- then argus_catalog.pinned_settings' values; the caller's come back on exit
SET default_text_search_config = 'pg_catalog.simple' SET xmloption = 'content'
SET lc_monetary = 'C' SET lc_numeric = 'C' SET lc_time = 'C' SET xmlbinary = 'base64'
SET timezone_abbreviations = 'Default' AS $$
DECLARE
    v_run      bigint;
    v_error    text;
    v_context  text;
    v_delta    regclass;
    v_dirty    jsonb;
    v_truncates regclass[];
    v_resized  boolean;
    v_rows_in  bigint;
    v_moved    boolean;
    v_deferred jsonb;
    v_timeout  text;
    v_settings argus_catalog.settings;
    v_program_state argus_catalog.program_state;
    v_program  record;
    v_attempts int := 0;
    v_started  timestamptz := clock_timestamp();
    v_failed   text[] := '{}';
    v_diagnose bigint;
    v_check    record;
    v_state    text;
    v_queries  json;
    v_pending  bigint;
BEGIN
    -- A caller (a writer may run cycles) that keeps the cycle's transaction open holds
    -- the cycle lock, and after a large inbox's claim every inbox (a helper): its
    -- session ends once idle in that transaction for a minute.
    IF current_setting('idle_in_transaction_session_timeout')::interval
           NOT BETWEEN interval '1 ms' AND interval '1 min' THEN
        PERFORM set_config('idle_in_transaction_session_timeout', '1min', true);
    END IF;
    -- Under REPEATABLE READ the snapshot predates the wait for the cycle lock: a load
    -- committed meanwhile would be unseen by the claim, then truncated with the inbox.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'argus cycles run at READ COMMITTED, not %',
              upper(current_setting('transaction_isolation'))
              USING HINT = 'begin its transaction with SET TRANSACTION ISOLATION LEVEL READ '
                           'COMMITTED, or ALTER ROLE ... SET default_transaction_isolation '
                           '= ''read committed'' for the role running cycles';
    END IF;
    IF wait THEN
        PERFORM argus.cycle_lock();
    ELSIF NOT argus.try_cycle_lock() THEN
        RAISE NOTICE 'argus: another cycle is running on this database; skipped';
        RETURN NULL;
    END IF;
    SELECT * INTO v_settings FROM argus_catalog.settings;
    SELECT * INTO v_program_state FROM argus_catalog.program_state;
    PERFORM argus.intact();  -- a crash emptied the network's state: rebuilt first
    SELECT count(*) INTO v_pending FROM argus_catalog.requests WHERE status = 'pending';
    IF v_pending > 0 THEN
        RAISE NOTICE 'argus: % request(s) to register or drop wait for an argus process of '
                     'the owner (argus worker, argus run --follow, or argus run): a cycle '
                     'run from SQL cannot parse queries', v_pending;
    END IF;
    -- event times of type timestamp or date are the same instants, and values the same
    -- text, whoever runs the cycle (a cron job with PGTZ set): argus.settings.pinned_session
    PERFORM set_config('TimeZone', v_settings.time_zone, true);
    PERFORM set_config(p.name, p.value, true) FROM argus_catalog.pinned_settings p;
    IF v_program_state.program_stale THEN
        PERFORM argus.assemble_program();
    END IF;
    IF EXISTS (SELECT FROM argus_catalog.staging) THEN
        PERFORM argus.sweep_staging();
    END IF;
    -- Plans kept for small deltas (settings.plan_kept_rows) were made for the histories'
    -- sizes then: a cycle after one that saw a history double or halve makes them anew.
    -- (argus.plans_kept: this session ran a cycle small enough to keep plans since.)
    IF v_program_state.plans_reset_run
       > coalesce(nullif(current_setting('argus.plans_reset_run', true), ''), '0')::bigint THEN
        IF current_setting('argus.plans_kept', true) = 'on' THEN
            EXECUTE 'DISCARD PLANS';
            PERFORM set_config('argus.plans_kept', 'off', false);
        END IF;
        PERFORM set_config('argus.plans_reset_run', v_program_state.plans_reset_run::text, false);
    END IF;
    IF v_settings.random_page_cost IS NOT NULL THEN
        PERFORM set_config('random_page_cost', v_settings.random_page_cost::text, true);
    END IF;
    INSERT INTO argus_catalog.runs (started_at, status)
    VALUES (clock_timestamp(), 'running') RETURNING run_id INTO v_run;
    IF v_run % 8 = 0 THEN
        PERFORM argus.expiry_upkeep(v_run);
    END IF;
    LOOP
        v_attempts := v_attempts + 1;
        BEGIN
            -- The last cycle's deltas to clear: TRUNCATE those whose file has grown (a
            -- DELETE leaves it as large), or that held over 5,000 rows (deleting them one
            -- by one, and stepping over them in every scan of this cycle, costs more than
            -- a TRUNCATE and the plans it makes be made again), unless a reader of a
            -- changes view holds them (then DELETE); the program DELETEs the others
            -- (argus_dirty), each by a statement of its own with its plan kept (a string
            -- of them, parsed and planned at every cycle, cost ~10 us a delta). Sizes are
            -- looked up at every 8th cycle, and after a large one (each lookup opens and
            -- locks the delta; a view's, a virtual selection's, has none).
            SELECT coalesce(jsonb_object_agg(d.node_id, true) FILTER (WHERE NOT d.large), '{}'),
                   array_agg(d.delta) FILTER (WHERE d.large)
              INTO v_dirty, v_truncates
              FROM (SELECT r.node_id, x.delta, x.delta IS NOT NULL
                                                AND pg_relation_size(x.delta) > CASE
                                                    WHEN r.inserted + r.retracted > 5000 THEN 0
                                                    ELSE v_settings.truncate_delta_bytes END
                                                AS large
                      FROM argus_catalog.run_nodes r
                      LEFT JOIN LATERAL (  -- a virtual selection's delta is a view, size 0
                           SELECT to_regclass(format('argus_net.%I', 'n' || r.node_id || '_delta'))
                            WHERE v_run % 8 = 0 OR r.inserted + r.retracted > 1000) AS x(delta)
                             ON true
                     WHERE r.run_id = (SELECT max(run_id) FROM argus_catalog.runs
                                        WHERE status = 'ok')
                       AND r.inserted + r.retracted > 0) AS d;
            IF v_truncates IS NOT NULL THEN
                v_timeout := current_setting('lock_timeout');
                PERFORM set_config('lock_timeout', '50ms', true);
                FOREACH v_delta IN ARRAY v_truncates LOOP
                    BEGIN
                        EXECUTE 'TRUNCATE ' || v_delta;
                    EXCEPTION WHEN lock_not_available THEN
                        EXECUTE 'DELETE FROM ' || v_delta;
                    END;
                END LOOP;
                PERFORM set_config('lock_timeout', v_timeout, true);
            END IF;
            IF EXISTS (SELECT FROM argus_catalog.capture_slot) THEN
                v_failed := v_failed || argus.read_capture(v_run);
            END IF;
            IF EXISTS (SELECT FROM argus_catalog.tracked) THEN
                PERFORM argus.note_rewritten();
            END IF;
            -- (a session's later cycles keep plans for small deltas: assemble_program)
            IF v_diagnose IS NULL AND current_setting('argus.cycled', true) = 'on'
               AND v_settings.plan_kept_rows IS NOT NULL THEN
                SELECT * INTO v_program
                  FROM argus_net.cycle_program_kept(v_run, v_dirty, v_settings);
            ELSE
                SELECT * INTO v_program FROM argus_net.cycle_program(v_run, v_dirty, v_settings);
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT, v_context = PG_EXCEPTION_CONTEXT;
            UPDATE argus_catalog.runs SET status = 'failed', finished_at = clock_timestamp(),
                   error = v_error || coalesce(' (' || split_part(v_context, E'\n', 1) || ')', '')
             WHERE run_id = v_run;
            RETURN v_run;
        END;
        IF v_diagnose IS NOT NULL THEN  -- the probe of the node that failed before
            UPDATE argus_catalog.queries SET culprit = coalesce(v_program.culprit,
                   'not one row: the error comes from the rows together, or from rows '
                   'another input of the node joins')
             WHERE failed_run = v_run AND failed_node = v_diagnose;
            v_diagnose := NULL;
        END IF;
        EXIT WHEN v_program.failed_node IS NULL;
        -- a cancel before node_timeout has passed is not node_timeout's (the caller's
        -- shorter statement_timeout, or a cancel request): it isolates nothing (a writer
        -- of one stream isolated another's queries so; a helper), and the rows wait
        -- (timed from this cycle's start, less a tenth for the client's arming: the
        -- caller's statement may have started long before it; a helper)
        IF v_program.failed_state = '57014' AND (v_settings.node_timeout IS NULL
                OR clock_timestamp() - v_started < v_settings.node_timeout * 0.9) THEN
            UPDATE argus_catalog.runs SET status = 'failed', finished_at = clock_timestamp(),
                   error = format('cancelled after %s, before node_timeout (%s) had passed: '
                                  'a statement_timeout shorter than it, or a cancel request; '
                                  'nothing is isolated and the rows wait for the next cycle',
                                  clock_timestamp() - v_started,
                                  coalesce(v_settings.node_timeout::text, 'none'))
             WHERE run_id = v_run;
            RETURN v_run;
        END IF;
        IF v_program.failed_state = '57014' THEN  -- past node_timeout: the timer is spent
            v_failed := argus.isolate(v_run, v_program.failed_node, '57014', format(
                'the cycle ran past node_timeout (%s) in this node', v_settings.node_timeout));
            UPDATE argus_catalog.runs SET status = 'timed_out', finished_at = clock_timestamp(),
                   isolated = v_failed,
                   error = format('isolated %s: the cycle ran past node_timeout (%s) in '
                                  'node %s; it runs again without them',
                                  array_to_string(v_failed, ', '), v_settings.node_timeout,
                                  v_program.failed_node)
             WHERE run_id = v_run;
            RETURN v_run;
        END IF;
        IF v_attempts > 20 THEN
            UPDATE argus_catalog.runs SET status = 'failed', finished_at = clock_timestamp(),
                   error = 'nodes kept failing after 20 were isolated: ' || v_program.failed_error
             WHERE run_id = v_run;
            RETURN v_run;
        END IF;
        v_failed := v_failed || argus.isolate(v_run, v_program.failed_node,
                                              v_program.failed_state, v_program.failed_error);
        v_diagnose := v_program.failed_node;
        PERFORM argus.assemble_program(v_diagnose);
    END LOOP;

    -- A query's own output expressions are computed in its views, over a node other
    -- queries may share: evaluated over the rows the node gained, so that a row they
    -- fail on isolates that query alone, as a node's failure isolates its queries.
    FOR v_check IN SELECT q.name, q.output_node, q.output_check
                     FROM argus_catalog.queries q
                     JOIN argus_catalog.run_nodes r ON r.run_id = v_run
                                                   AND r.node_id = q.output_node
                    WHERE q.output_check IS NOT NULL AND q.status = 'ok' AND r.inserted > 0
    LOOP
        BEGIN
            EXECUTE v_check.output_check;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT, v_state = RETURNED_SQLSTATE;
            IF argus.server_error(v_state) THEN
                RAISE;
            END IF;
            UPDATE argus_catalog.queries
               SET status = 'failed', failed_run = v_run, failed_node = v_check.output_node,
                   failed_at = now(), culprit = NULL,
                   error = format('%s (SQLSTATE %s, in its output columns)', v_error, v_state)
             WHERE name = v_check.name;
            v_failed := v_failed || v_check.name;
        END;
    END LOOP;

    -- What the cycle did, in one statement (not one per part): the queries whose answer
    -- changed (not a row per query and cycle, which grew with the queries), named by
    -- the program for each output node (not read from the queries' rows), as json (not
    -- jsonb, whose objects sort their keys; docs/fixed-costs.md):
    -- their output node's changes, or, for an output reading the clock when it moved,
    -- what their changes view counts (every row of the answer at the new clock, every
    -- row of the old one at the previous clock, and the node's changes); each node's
    -- history size, and what maintaining it cost (moving averages, for
    -- the program's choice between applying and rebuilding).
    SELECT now IS DISTINCT FROM previous INTO v_moved FROM argus_catalog.clock;
    v_deferred := v_program.outputs -> 'd';  -- (null, as a rule: no row's lookup then)
    WITH r AS (
        SELECT r.*, r.rebuilt IS NOT NULL AND r.flush_ms IS NOT NULL AS timed,
               (s.hist_rows + r.inserted - r.retracted > 2 * s.planned_rows + 1000
                OR s.hist_rows + r.inserted - r.retracted < s.planned_rows / 2 - 1000)
                   AS resized
          FROM argus_catalog.run_nodes r JOIN argus_catalog.node_stats s USING (node_id)
         WHERE r.run_id = v_run
    ), changed AS (
        SELECT q.name, r.inserted, r.retracted
          FROM r, jsonb_array_elements_text(
                      coalesce(v_program.outputs -> r.node_id::text, '[]')
                      || coalesce(CASE WHEN NOT v_moved
                                       THEN v_program.clock_outputs -> r.node_id::text END,
                                  '[]')) AS q(name)
         WHERE r.inserted + r.retracted > 0
        UNION ALL  -- a deferred join's: how many, its changes view says when read
        SELECT DISTINCT q.name, NULL::bigint, NULL::bigint
          FROM r, jsonb_array_elements_text(v_deferred -> r.node_id::text) AS q(name)
         WHERE r.inserted + r.retracted > 0
        UNION ALL
        SELECT q.name, coalesce(r.inserted, 0) + a.rows, coalesce(r.retracted, 0) + a.rows
          FROM jsonb_each(CASE WHEN v_moved THEN v_program.clock_outputs END) AS o(node, names)
          JOIN argus_catalog.node_stats s ON s.node_id = o.node::bigint
          LEFT JOIN r ON r.node_id = s.node_id
         CROSS JOIN LATERAL (SELECT s.hist_rows + coalesce(r.inserted - r.retracted, 0)) AS a(rows)
         CROSS JOIN LATERAL jsonb_array_elements_text(o.names) AS q(name)
         WHERE r.inserted + r.retracted > 0 OR a.rows > 0
    ), stats AS (
        UPDATE argus_catalog.node_stats n SET
               hist_rows = n.hist_rows + r.inserted - r.retracted,
               planned_rows = CASE WHEN r.resized OR n.planned_rows IS NULL
                                   THEN n.hist_rows + r.inserted - r.retracted
                                   ELSE n.planned_rows END,
               apply_ms_row = CASE WHEN NOT r.timed OR r.rebuilt THEN n.apply_ms_row
                                   ELSE coalesce(0.7 * n.apply_ms_row, 0)
                                        + CASE WHEN n.apply_ms_row IS NULL THEN 1 ELSE 0.3 END
                                          * r.flush_ms / (r.changes + 10) END,
               rebuild_ms_row = CASE WHEN NOT r.timed OR NOT r.rebuilt THEN n.rebuild_ms_row
                                     ELSE coalesce(0.7 * n.rebuild_ms_row, 0)
                                          + CASE WHEN n.rebuild_ms_row IS NULL THEN 1 ELSE 0.3 END
                                            * r.flush_ms / (r.rebuild_rows + 10) END
          FROM r
         WHERE n.node_id = r.node_id AND (r.inserted + r.retracted > 0 OR r.timed)
    )
    UPDATE argus_catalog.runs SET
           status = 'ok', finished_at = clock_timestamp(), clock = argus.clock_now(),
           rows_in = (SELECT coalesce(sum(rows), 0) FROM argus_catalog.run_streams
                       WHERE run_id = v_run),
           nodes_run = v_program.nodes_run,
           queries = (SELECT coalesce(json_object_agg(name, ARRAY[inserted, retracted]), '{}')
                        FROM changed WHERE name <> ALL(v_failed)),
           isolated = nullif(v_failed, '{}')
     WHERE run_id = v_run
    RETURNING (SELECT bool_or(r.resized) FROM r), rows_in, queries
         INTO v_resized, v_rows_in, v_queries;
    -- A history that doubled or halved since the plans kept for small deltas were made
    -- (settings.plan_kept_rows) has every session make them again (at its next cycle's
    -- start).
    IF v_resized THEN
        UPDATE argus_catalog.program_state SET plans_reset_run = v_run;
    END IF;
    PERFORM argus.trim_log(v_run, v_settings.keep_runs, v_settings.keep_runs_for);
    IF EXISTS (SELECT FROM argus_catalog.change_logs) THEN  -- (subscribed queries only)
        PERFORM argus.log_changes(v_run, v_queries, v_settings.keep_changes);
    END IF;
    -- delivered to every LISTEN argus_cycle when the cycle commits (argus.subscriptions)
    PERFORM pg_notify('argus_cycle', argus.cycle_payload(v_run, v_queries, NOT EXISTS (
        SELECT FROM argus_catalog.grants WHERE query IS NOT NULL)));
    IF current_setting('argus.cycled', true) = 'on' AND v_rows_in <= v_settings.plan_kept_rows THEN
        PERFORM set_config('argus.plans_kept', 'on', false);
    END IF;
    PERFORM set_config('argus.cycled', 'on', false);  -- the session's next cycles keep plans
    RETURN v_run;
END $$;

-- The numbers of a source's columns `p_names` as they are now, by name
-- (argus_catalog.tracked.attnums): NULL for a column it no longer has.
CREATE OR REPLACE FUNCTION argus.column_numbers(p_source oid, p_names text[]) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT jsonb_object_agg(e.name, a.attnum)
      FROM unnest(p_names) AS e(name)
      LEFT JOIN pg_attribute a ON a.attrelid = p_source AND a.attname = e.name
                              AND NOT a.attisdropped
$$;

-- Tracked tables whose source was rewritten in place since the last cycle: it has a new
-- file (pg_relation_filenode), as ALTER TABLE … TYPE … USING gives it without a change of
-- its rows captured by the triggers or decoded by the slot (answers kept the old values;
-- a helper's round), or a column argus reads has another number (renamed in another's
-- place, or dropped and added again: argus holds another column's values, or old ones). Said at every cycle until `argus resync` compares its rows with
-- argus's (argus.track.resync, reading the source as its owner), not here as argus's
-- owner: planning a read of the source runs code its owner attached to it (a partial
-- index's predicate, a rule; a helper). A TRUNCATE gives it a new file too, which its
-- trigger capture records (stream/track); a slot cannot tell a TRUNCATE from a rewrite
-- after it (a helper), nor can VACUUM FULL and CLUSTER be told from one: those are said
-- as rewrites.
CREATE OR REPLACE FUNCTION argus.note_rewritten() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_t record;
BEGIN
    -- (a row a writer's TRUNCATE holds is seen at the next cycle: waiting for it held
    -- every cycle up for as long as the writer's transaction lasted; a helper)
    UPDATE argus_catalog.tracked t SET filenode = pg_relation_filenode(t.source),
           rewritten_at = CASE WHEN t.filenode IS NULL AND t.attnums IS NULL
                               THEN t.rewritten_at ELSE coalesce(t.rewritten_at, now()) END
      FROM (SELECT stream_id FROM argus_catalog.tracked
             WHERE pg_relation_filenode(source) IS DISTINCT FROM filenode
                   AND pg_relation_filenode(source) IS NOT NULL
                OR argus.column_numbers(source, ARRAY(SELECT jsonb_object_keys(attnums)))
                   IS DISTINCT FROM attnums
                OR NOT argus.capturing(source, method)
               FOR UPDATE SKIP LOCKED) AS moved
     WHERE t.stream_id = moved.stream_id;
    IF NOT pg_has_role(session_user, current_user, 'MEMBER') THEN
        RETURN;  -- (said to argus's administrators, not to a writer running a cycle)
    END IF;
    FOR v_t IN SELECT s.name, t.source, argus.capturing(t.source, t.method) AS capturing
                 FROM argus_catalog.tracked t JOIN argus_catalog.streams s USING (stream_id)
                WHERE t.rewritten_at IS NOT NULL AND t.stopped IS NULL LOOP
        IF v_t.capturing THEN
            RAISE WARNING 'argus: table %: its source % was rewritten in place (ALTER TABLE … '
                          'USING; or VACUUM FULL, CLUSTER, which change nothing), or its '
                          'capture was off a while, and its answers may not have its rows: '
                          'argus resync %', v_t.name, to_json(v_t.source::regclass::text),
                          v_t.name;
        ELSE
            RAISE WARNING 'argus: table %: the triggers that capture the changes of its '
                          'source % are disabled or gone, and its changes are lost meanwhile: '
                          'enable them (ALTER TABLE … ENABLE ALWAYS TRIGGER argus_track_insert, '
                          '…), then argus resync %', v_t.name,
                          to_json(v_t.source::regclass::text), v_t.name;
        END IF;
    END LOOP;
END $$;

-- Whether a source tracked by triggers has its four capture triggers, firing always
-- (stream/track_triggers): its owner may disable them (a helper's round), and its
-- changes are lost meanwhile. A slot's capture has no triggers.
CREATE OR REPLACE FUNCTION argus.capturing(p_source oid, p_method text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p_method <> 'trigger' OR (
        SELECT count(*) FROM pg_trigger g
         WHERE g.tgrelid = p_source AND g.tgenabled = 'A'
           AND g.tgname IN ('argus_track_insert', 'argus_track_update',
                            'argus_track_delete', 'argus_track_truncate')) = 4
$$;

-- The changes the capture slot holds for the tracked tables (argus track --method slot),
-- written into their inboxes in the cycle's transaction, up to the WAL flushed now (a
-- slot decodes no further: an asynchronous commit may be written and not yet flushed),
-- which is recorded: the next cycle moves the slot there first (its reader), so a
-- committed cycle's changes are never read twice and a failed cycle's are read again.
-- A TRUNCATE cuts a table's changes in two: the keys it deletes are those before it.
-- A table whose changes cannot be applied (its source's columns changed, or an update's
-- TOASTed value is missing) stops following its source in a cycle (p_run): its queries
-- are isolated, naming the fix, its changes are read past from then on, and the other
-- tables' are applied (one table's failed every cycle; a helper's round); read outside a
-- cycle (untrack), nothing is applied then. It runs as the owner (a session that tracks
-- with higher rights calls it too, and the SQL it runs is the catalog's), reading values
-- in the styles the reader wrote them in.
DROP FUNCTION IF EXISTS argus.read_capture();
CREATE OR REPLACE FUNCTION argus.read_capture(p_run bigint DEFAULT NULL) RETURNS text[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off
SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres' SET extra_float_digits = 3 AS $$
DECLARE
    v_slot argus_catalog.capture_slot;
    v_upto pg_lsn := pg_current_wal_flush_lsn();
    v_found record;
    v_table record;
    v_from bigint;
    v_cut bigint;
    v_rows bigint;
    v_error text;
    v_state text;
    v_isolated text[] := '{}';
BEGIN
    SELECT * INTO v_slot FROM argus_catalog.capture_slot;
    IF NOT EXISTS (SELECT FROM argus_catalog.tracked WHERE method = 'slot') THEN
        RETURN v_isolated;
    END IF;
    SELECT s.wal_status, s.database INTO v_found FROM pg_replication_slots s
     WHERE s.slot_name = v_slot.slot;
    IF v_found.database IS DISTINCT FROM current_database() OR v_found.wal_status = 'lost' THEN
        RAISE EXCEPTION 'argus: the capture slot % %', v_slot.slot,
              CASE WHEN v_found.database IS NULL THEN 'is gone'
                   WHEN v_found.database <> current_database()
                   THEN format('is database %s''s: this database was copied from it', v_found.database)
                   ELSE 'lost WAL it had not read (max_slot_wal_keep_size)' END
              USING HINT = 'the changes of the tracked tables cannot be read: untrack them and '
                           'track them again (argus untrack NAME; argus track SOURCE --method slot)';
    END IF;
    EXECUTE format('INSERT INTO argus_catalog.captured SELECT * FROM %s($1, $2)', v_slot.reader)
      USING v_slot.applied, v_upto;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    FOR v_found IN SELECT DISTINCT ON (t.stream_id) t.stream_id, s.name, x.problem
      FROM argus_catalog.captured c
      JOIN argus_catalog.tracked t ON t.source = c.relid AND c.lsn >= t.start_lsn
                                  AND t.stopped IS NULL
      JOIN argus_catalog.streams s USING (stream_id),
           LATERAL (SELECT CASE WHEN c.op = 'R' THEN
                               (SELECT format('its source''s column %s was dropped, renamed or '
                                              'changed type', e.key)
                                  FROM jsonb_each_text(t.columns) AS e
                                 WHERE c.new ->> e.key IS DISTINCT FROM e.value LIMIT 1)
                           WHEN c.missing IS NOT NULL THEN
                               format('the capture slot does not have the value of its '
                                      'source''s column %s, which an update left unchanged '
                                      '(REPLICA IDENTITY FULL was taken away)', c.missing[1])
                           END) AS x(problem)
     WHERE x.problem IS NOT NULL
     ORDER BY t.stream_id, c.ord LOOP
        IF p_run IS NULL THEN
            RAISE EXCEPTION 'argus: table %: %', v_found.name, v_found.problem
                  USING HINT = format('untrack it (argus untrack %s: its changes not read yet '
                                      'are lost) and track its source again', v_found.name);
        END IF;
        v_isolated := v_isolated || argus.stop_tracking(p_run, v_found.stream_id,
                                                          v_found.problem);
    END LOOP;
    IF v_rows > 0 THEN
        PERFORM set_config('argus.capture', 'on', true);  -- the source's key holds: no check
        FOR v_table IN SELECT t.stream_id, t.source, t.start_lsn, t.apply_sql
                         FROM argus_catalog.tracked t
                        WHERE t.method = 'slot' AND t.stopped IS NULL LOOP
            BEGIN  -- (a value the table refuses: a NOT NULL the source no longer has)
                v_from := 0;
                FOR v_cut IN SELECT c.ord FROM argus_catalog.captured c
                              WHERE c.relid = v_table.source AND c.op = 'T'
                                AND c.lsn >= v_table.start_lsn ORDER BY c.ord LOOP
                    EXECUTE v_table.apply_sql[1]
                      USING v_table.source, v_table.start_lsn, v_from, v_cut;
                    EXECUTE v_table.apply_sql[2];
                    v_from := v_cut;
                END LOOP;
                EXECUTE v_table.apply_sql[1]
                  USING v_table.source, v_table.start_lsn, v_from, 9223372036854775807;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT, v_state = RETURNED_SQLSTATE;
                IF p_run IS NULL OR argus.server_error(v_state) THEN
                    RAISE;
                END IF;
                v_isolated := v_isolated || argus.stop_tracking(
                    p_run, v_table.stream_id, 'its changes cannot be applied: ' || v_error);
            END;
        END LOOP;
        PERFORM set_config('argus.capture', 'off', true);
        TRUNCATE argus_catalog.captured;
    END IF;
    UPDATE argus_catalog.capture_slot SET applied = v_upto;
    IF cardinality(v_isolated) > 0 THEN  -- (without the nodes only they use)
        PERFORM argus.assemble_program();
    END IF;
    RETURN v_isolated;
END $$;

-- A table tracked by the slot stops following its source in cycle p_run, for
-- `problem` (argus.read_capture): its queries are isolated, naming the fix. Their names.
CREATE OR REPLACE FUNCTION argus.stop_tracking(p_run bigint, p_stream bigint, p_problem text)
RETURNS text[] LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_name text := (SELECT name FROM argus_catalog.streams WHERE stream_id = p_stream);
BEGIN
    UPDATE argus_catalog.tracked SET stopped = p_problem WHERE stream_id = p_stream;
    RETURN (SELECT coalesce(array_agg(q), '{}')
              FROM argus_catalog.nodes n, unnest(argus.isolate(p_run, n.node_id, '55000', format(
                       'argus: table %s stopped following its source: %s; untrack it (argus '
                       'untrack %s), then track its source again', v_name, p_problem, v_name)))
                   AS q
             WHERE n.kind = ANY(argus.kinds('loaded')) AND n.definition ->> 'stream' = v_name);
END $$;

-- The cycle log (argus.runs and what hangs off it) keeps the last `keep` cycles and
-- the cycles of the last `keep_for`, whichever are fewer (NULL: no limit of that kind).
CREATE OR REPLACE FUNCTION argus.trim_log(run bigint, keep bigint, keep_for interval)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_before bigint;
BEGIN
    IF run % 100 <> 0 THEN  -- every hundredth cycle is often enough
        RETURN;
    END IF;
    SELECT greatest(run - keep, (SELECT max(run_id) FROM argus_catalog.runs
                                  WHERE started_at < now() - keep_for))
      INTO v_before;
    -- per-node statistics for the last 500 cycles or more; the cycle log for as long
    -- as the settings say
    DELETE FROM argus_catalog.run_nodes WHERE run_id < run - 500;
    IF v_before IS NOT NULL THEN
        DELETE FROM argus_catalog.run_streams WHERE run_id <= v_before;
        DELETE FROM argus_catalog.runs WHERE run_id <= v_before;
    END IF;
END $$;

-- Drop the staging tables that failed or killed loads left behind: older than
-- settings.stale_staging_after and held by no live load (argus.loads.load_lock holds
-- pg_advisory_lock(0x41524C44, hashtext(load id)) from staging to commit). Returns the
-- load ids swept. Called by every load and every cycle.
CREATE OR REPLACE FUNCTION argus.sweep_staging() RETURNS text[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_row record;
    v_swept text[] := '{}';
BEGIN
    FOR v_row IN SELECT s.* FROM argus_catalog.staging s, argus_catalog.settings t
                  WHERE s.created_at < now() - t.stale_staging_after LOOP
        IF pg_try_advisory_xact_lock(1095912516,
                                     hashtext(v_row.stream || '.' || v_row.load_id)) THEN
            EXECUTE format('DROP TABLE IF EXISTS argus_staging.%I', v_row.table_name);
            DELETE FROM argus_catalog.staging
             WHERE stream = v_row.stream AND load_id = v_row.load_id;
            v_swept := v_swept || v_row.load_id;
        END IF;
    END LOOP;
    RETURN v_swept;
END $$;

-- Whether the session's role may read a query's answer: what a cycle report tells it of
-- the query (a failure's error quotes the row it failed on). SQL with no SET clause and
-- every function pg_catalog's by name, so that its callers inline it: with a SET clause
-- each call was planned anew, for every query of every cycle's report.
CREATE OR REPLACE FUNCTION argus.may_read_query(p_name text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(pg_catalog.has_table_privilege(
                        session_user,
                        pg_catalog.to_regclass(pg_catalog.format('argus_results.%I', p_name)),
                        'SELECT'), false)
$$;

-- What a cycle did, in one row (argus.cycle.report), for whoever may run cycles; of
-- the queries, only those the session's role may read.
-- PL/pgSQL, not SQL, so that a session plans its statement once, not at every cycle.
CREATE OR REPLACE FUNCTION argus.cycle_report(p_run bigint)
RETURNS TABLE (status text, error text, nodes_run bigint, rows_in jsonb, held jsonb,
               failed jsonb, queries json)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    RETURN QUERY
    SELECT r.status, r.error, r.nodes_run::bigint,
           (SELECT coalesce(jsonb_object_agg(s.stream, s.rows), '{}')
              FROM argus_catalog.run_streams s WHERE s.run_id = r.run_id),
           (SELECT coalesce(jsonb_object_agg(s.stream, s.quarantined), '{}')
              FROM argus_catalog.run_streams s WHERE s.run_id = r.run_id AND s.quarantined > 0),
           CASE WHEN r.isolated IS NULL THEN '{}' ELSE
           (SELECT coalesce(jsonb_object_agg(q.name, concat_ws('; row: ', q.error, q.culprit)),
                            '{}')
              FROM argus_catalog.queries q
             WHERE q.failed_run = r.run_id AND argus.may_read_query(q.name)) END,
           CASE WHEN pg_has_role(session_user, current_user, 'MEMBER')
                THEN coalesce(r.queries, '{}')
                ELSE (SELECT coalesce(json_object_agg(k, v), '{}')
                        FROM json_each(r.queries) AS e(k, v) WHERE argus.may_read_query(k)) END
      FROM argus_catalog.runs r WHERE r.run_id = p_run;
END $$;

-- Whether run `p_run` ends a period of settings.reoptimize_every (argus.adapt), for
-- whoever may run cycles.
-- (PL/pgSQL: it keeps its plan, where an SQL function would be planned at every cycle.)
CREATE OR REPLACE FUNCTION argus.reoptimize_due(p_run bigint) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    RETURN coalesce((SELECT p_run % reoptimize_every = 0 FROM argus_catalog.settings), false);
END $$;

-- Zhu's trigger (issue 52): the queries whose own joins now write far more per row
-- that comes in than they did after the query was last planned — more than 3 times, in
-- the last 2 cycles that took rows against the first 3 after its last decision (or
-- after its joins were made), and at least 1,000 rows — as {query: [rows written per
-- 1,000 in, now; and then]}; argus.adapt plans them again at once. Measured against
-- itself, not an estimate: a drift shows whatever the estimates were, and a decision
-- that kept the layout sets the level again. None in a cycle that ends a period (all
-- are planned then). Written: a node's inserts or retractions, whichever are more (a
-- window's purge retracts what it inserted). It runs after every cycle, so it reads
-- little: only queries whose joins wrote in this cycle, and of each the last 2 cycles;
-- only of those whose joins wrote 1,000 rows in them, the first 5 since, found by the
-- cycle log's key (per-node statistics are kept 500 cycles: none older). (Reading the 7
-- of every query took 3.5 ms of a TPC-H cycle, where 1 of 15 queries wrote that many.)
-- Also the queries a decision held back until their windows turn over, when due.
CREATE OR REPLACE FUNCTION argus.replan_triggered(p_run bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM argus_catalog.settings
                    WHERE reoptimize_every IS NOT NULL AND p_run % reoptimize_every <> 0) THEN
        RETURN NULL;
    END IF;
    -- (first, cheaply: no query's joins wrote 1,000 rows in the last 2 cycles that took
    -- rows unless all joins together did, and none is due. The statement below, planned
    -- again in every new session, costs a small cycle more than the rest of its books.)
    IF NOT EXISTS (SELECT FROM argus_catalog.migrations m WHERE m.recheck_at <= p_run)
       AND (SELECT coalesce(sum(greatest(m.inserted, m.retracted)), 0)
              FROM (SELECT r.run_id FROM argus_catalog.runs r
                     WHERE r.run_id <= p_run AND r.status = 'ok' AND r.rows_in > 0
                     ORDER BY r.run_id DESC LIMIT 2) l
              JOIN argus_catalog.run_nodes m ON m.run_id = l.run_id
              JOIN argus_catalog.nodes n ON n.node_id = m.node_id
                   AND n.kind = ANY(argus.kinds('joins'))) < 1000 THEN
        RETURN NULL;
    END IF;
    RETURN (
        WITH q AS (  -- the queries whose joins wrote in this cycle, and those joins (a
                     -- shared join names each user: argus.adapt plans them together)
                 SELECT qq.name, array_agg(n.node_id) AS nodes, max(n.created_at) AS made,
                        greatest(p_run - 500, coalesce((
                            SELECT max(m.after_run) FROM argus_catalog.migrations m
                             WHERE m.query = qq.name  -- (a check that planned nothing:
                               AND m.unchanged_since IS NULL), 0)) AS after  -- no baseline)
                   FROM argus_catalog.run_nodes w
                   JOIN argus_catalog.nodes n ON n.node_id = w.node_id
                        AND n.kind = ANY(argus.kinds('joins'))
                   JOIN argus_catalog.query_nodes qn ON qn.node_id = w.node_id
                   JOIN argus_catalog.queries qq ON qq.query_id = qn.query_id
                        AND qq.status = 'ok' AND qq.evaluate = 'incremental'
                  WHERE w.run_id = p_run
                  GROUP BY qq.name),
             latest AS (  -- the last 2 cycles that took rows: those of every query that has
                          -- taken rows in 5 cycles since it was planned (a query's are the
                          -- cycles after a run and a time, a suffix of these)
                 SELECT r.run_id, r.rows_in, r.started_at FROM argus_catalog.runs r
                  WHERE r.run_id <= p_run AND r.status = 'ok' AND r.rows_in > 0
                  ORDER BY r.run_id DESC LIMIT 2),
             now AS (  -- what each query's joins write now, per 1,000 rows in; only a
                       -- query whose joins wrote 1,000 rows or more is looked at further
                 SELECT q.*, w.written, 1000 * w.written / l.rows_in AS now
                   FROM q
                  CROSS JOIN (SELECT sum(rows_in) AS rows_in, min(run_id) AS first,
                                     min(started_at) AS started, count(*) AS n FROM latest) l
                  CROSS JOIN LATERAL (
                        SELECT sum(greatest(m.inserted, m.retracted)) AS written
                          FROM latest r JOIN argus_catalog.run_nodes m ON m.run_id = r.run_id
                         WHERE m.node_id = ANY(q.nodes)) w
                  WHERE l.n = 2 AND l.first > q.after AND l.started > q.made
                    AND w.written >= 1000),
             since AS (  -- the first 5 cycles that took rows since it was planned
                 SELECT n.name, n.now, c.rows_in,
                        row_number() OVER (PARTITION BY n.name ORDER BY c.run_id) AS rank,
                        (SELECT sum(greatest(m.inserted, m.retracted))
                           FROM argus_catalog.run_nodes m
                          WHERE m.run_id = c.run_id AND m.node_id = ANY(n.nodes)) AS written
                   FROM now n CROSS JOIN LATERAL (
                        SELECT r.run_id, r.rows_in FROM argus_catalog.runs r
                         WHERE r.run_id > n.after AND r.run_id <= p_run AND r.status = 'ok'
                           AND r.rows_in > 0 AND r.started_at > n.made
                         ORDER BY r.run_id LIMIT 5) c),
             cost AS (SELECT name, min(now) AS now,  -- (then: the first 3 of the 5)
                             1000 * sum(written) FILTER (WHERE rank <= 3)
                                  / sum(rows_in) FILTER (WHERE rank <= 3) AS since
                        FROM since GROUP BY name HAVING count(*) = 5),
             fired AS (SELECT name, jsonb_build_array(round(now), round(since)) AS costs
                         FROM cost WHERE now > 3 * since),
             due AS (  -- held back by its windows' turnover, to be planned again by now
                       -- (argus.mqo.replan.decide; [null, null]: no cost fired it)
                 SELECT m.query AS name, jsonb_build_array(NULL, NULL) AS costs
                   FROM argus_catalog.migrations m
                   JOIN argus_catalog.queries qq ON qq.name = m.query AND qq.status = 'ok'
                        AND qq.evaluate = 'incremental'
                  WHERE m.recheck_at <= p_run
                    AND m.migration_id = (SELECT max(l.migration_id)
                                            FROM argus_catalog.migrations l
                                           WHERE l.query = m.query)
                    AND m.query NOT IN (SELECT name FROM fired))
        SELECT jsonb_object_agg(name, costs)  -- (of the queries the session may read:
          FROM (SELECT * FROM fired UNION ALL SELECT * FROM due) t  -- a writer's cycle
         WHERE argus.may_read_query(name));  -- learnt others' fan-out; a helper)
END $$;

-- Every 8th cycle, before the program runs (its plans are made after the change): a
-- node whose rows expire by themselves (nodes/expiry; nodes.expires_by) drops the indexes of
-- the columns they expire by when its history holds at most 16 times the rows that
-- leave it at a cycle (averaged over those of its last 8 cycles that expired any, at
-- least 3, in a history of 10,000 rows or more), and makes them again past 64 times.
-- An index entry costs every row that comes in far more than a scan costs each row
-- held (measured on issue 52's windowed join: docs/performance.md). A DROP INDEX that
-- waits past 50 ms for a reader of the history is left to the next check; any other
-- failure too, with a warning (an upkeep that fails must not stop the cycles).
CREATE OR REPLACE FUNCTION argus.expiry_upkeep(p_run bigint) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v        record;
    v_index  regclass;
    v_column text;
    v_timeout text := current_setting('lock_timeout');
BEGIN
    FOR v IN
        SELECT n.node_id, n.expires_by, n.expiry_scanned, h.hist
          FROM argus_catalog.nodes n
          JOIN argus_catalog.node_stats s USING (node_id)
         CROSS JOIN LATERAL (
               SELECT avg(r.retracted) AS expired FROM argus_catalog.run_nodes r
                WHERE r.node_id = n.node_id AND r.run_id > p_run - 8 AND r.retracted > 0
               HAVING count(*) >= 3) e
         CROSS JOIN LATERAL (
               SELECT to_regclass(format('%I.%I', n.hist_schema, n.hist_name)) AS hist) h
         WHERE n.expires_by IS NOT NULL AND h.hist IS NOT NULL
           AND CASE WHEN n.expiry_scanned THEN 64 * e.expired < s.hist_rows
                    ELSE 16 * e.expired >= s.hist_rows AND s.hist_rows >= 10000 END
    LOOP
        BEGIN
            IF v.expiry_scanned THEN
                FOREACH v_column IN ARRAY v.expires_by LOOP
                    EXECUTE format('CREATE INDEX ON %s (%I)', v.hist, v_column);
                END LOOP;
            ELSE
                PERFORM set_config('lock_timeout', '50ms', true);
                FOR v_index IN
                    SELECT i.indexrelid::regclass FROM pg_index i
                      JOIN pg_class c ON c.oid = i.indexrelid
                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                     WHERE i.indrelid = v.hist AND i.indnatts = 1
                       AND a.attname = ANY(v.expires_by)
                       AND c.relname NOT LIKE 'argus\_%'  -- (indexes children probe)
                LOOP
                    EXECUTE format('DROP INDEX %s', v_index);
                END LOOP;
                PERFORM set_config('lock_timeout', v_timeout, true);
            END IF;
            UPDATE argus_catalog.nodes SET expiry_scanned = NOT v.expiry_scanned
             WHERE node_id = v.node_id;
        EXCEPTION WHEN lock_not_available THEN  -- (the lock_timeout set is undone too)
            NULL;
        WHEN OTHERS THEN
            RAISE WARNING 'argus: the expiry index of node % was not changed: %',
                          v.node_id, SQLERRM;
        END;
    END LOOP;
END $$;

-- One cycle and its report in one statement: a round trip less per cycle than
-- run_cycle() then cycle_report() (argus.cycle.run). No row: another cycle was running.
CREATE OR REPLACE FUNCTION argus.cycle(wait boolean DEFAULT false)
RETURNS TABLE (run_id bigint, status text, error text, nodes_run bigint, rows_in jsonb,
               held jsonb, failed jsonb, queries json, replan jsonb, reoptimize boolean)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_run bigint := argus.run_cycle(wait);
BEGIN
    IF v_run IS NOT NULL THEN
        -- reoptimize: this cycle ends a period of settings.reoptimize_every; replan:
        -- the queries Zhu's trigger names (argus.adapt)
        RETURN QUERY SELECT v_run, r.*, argus.replan_triggered(v_run),
                            argus.reoptimize_due(v_run)
                       FROM argus.cycle_report(v_run) r;
    END IF;
END $$;

-- A load id, claimed for a load into `p_stream` in the caller's transaction (false:
-- loaded before; a concurrent load of the same id waits here for the first to end),
-- and its row count once the rows are in. A writer may claim ids only for the streams
-- whose inboxes it may insert into (its session's role), so that it cannot make
-- another writer's load look done.
CREATE OR REPLACE FUNCTION argus.claim_load(p_load_id text, p_stream text, p_source text)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    IF NOT has_table_privilege(session_user, format('argus_inbox.%I', p_stream), 'INSERT') THEN
        RAISE EXCEPTION 'argus: permission denied to load into stream %', p_stream
              USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO argus_catalog.loads (load_id, stream, rows, source)
    VALUES (p_load_id, p_stream, 0, p_source) ON CONFLICT (stream, load_id) DO NOTHING;
    RETURN FOUND;
END $$;
CREATE OR REPLACE FUNCTION argus.count_load(p_load_id text, p_stream text, p_rows bigint)
RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
    UPDATE argus_catalog.loads SET rows = p_rows
     WHERE stream = p_stream AND load_id = p_load_id AND rows = 0
       AND has_table_privilege(session_user, format('argus_inbox.%I', stream), 'INSERT')
$$;

-- The streams and their columns, for whoever may load or read one; a table that
-- follows an ordinary table (argus track) names it (source).
CREATE OR REPLACE FUNCTION argus.stream_schemas()
RETURNS TABLE (name text, time_column text, columns text[], types text[], not_null text[],
               primary_key text[], source text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
    SELECT s.name, s.time_column, array_agg(c.name ORDER BY c.position),
           array_agg(c.type ORDER BY c.position),
           coalesce(array_agg(c.name ORDER BY c.position) FILTER (WHERE c.not_null), '{}'),
           s.primary_key,
           (SELECT CASE WHEN r.oid IS NULL THEN format('(a dropped table, oid %s)', t.source)
                        ELSE format('%I.%I', n.nspname, r.relname) END
              FROM argus_catalog.tracked t LEFT JOIN pg_class r ON r.oid = t.source
              LEFT JOIN pg_namespace n ON n.oid = r.relnamespace
             WHERE t.stream_id = s.stream_id)
      FROM argus_catalog.streams s JOIN argus_catalog.stream_columns c USING (stream_id)
     WHERE pg_has_role(session_user, (SELECT role_prefix || '_owner' FROM argus_catalog.settings), 'USAGE')
        IS NOT FALSE
        OR has_table_privilege(session_user, format('argus_inbox.%I', s.name), 'INSERT')
        OR has_table_privilege(session_user, format('argus_streams.%I', s.name), 'SELECT')
     GROUP BY s.stream_id ORDER BY s.name
$$;

-- A held-back row as jsonb, or NULL where jsonb cannot hold it (a string or a value past
-- 256 MB): the quarantine then keeps the row's text (quarantine.row_text; stream/hold).
CREATE OR REPLACE FUNCTION argus.try_jsonb(v anyelement) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN to_jsonb(v);
EXCEPTION WHEN program_limit_exceeded THEN
    RETURN NULL;
END $$;

-- A registrar's request (argus_catalog.requests) is its own: requested_by is the role
-- inserting it, and it starts pending; at most 100 of a role's wait at once (a flood
-- grew the queue without bound; a helper). The owner's workers are woken by a
-- notification.
CREATE OR REPLACE FUNCTION argus.request_row() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- one role's requests one at a time, to its commit: the count sees only committed
    -- rows, and two sessions racing each queued 100 (a helper)
    PERFORM argus.request_turn();
    IF (SELECT count(*) FROM argus_catalog.requests
         WHERE requested_by = current_user AND status = 'pending') >= 100 THEN
        RAISE EXCEPTION 'argus: role % has 100 requests waiting to be carried out',
              quote_ident(current_user) USING ERRCODE = 'program_limit_exceeded',
              HINT = 'wait until argus worker (or argus run) has carried them out';
    END IF;
    NEW.requested_by := current_user;
    NEW.requested_at := now();
    NEW.status := 'pending';
    NEW.error := NULL;
    NEW.error_class := NULL;
    NEW.done_at := NULL;
    PERFORM pg_notify('argus_requests', NEW.kind);
    RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER request_row BEFORE INSERT ON argus_catalog.requests
FOR EACH ROW EXECUTE FUNCTION argus.request_row();

-- The requesting login role's turn, to its transaction's end: a lock on its row of
-- argus_catalog.request_turns, which no role but argus's owner may lock (an advisory lock
-- keyed by its name let any role that could connect hold its requests; a helper).
CREATE OR REPLACE FUNCTION argus.request_turn() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    INSERT INTO argus_catalog.request_turns VALUES (session_user) ON CONFLICT DO NOTHING;
    PERFORM FROM argus_catalog.request_turns WHERE role = session_user FOR UPDATE;
END $$;

-- The privileges of argus's roles (argus.roles), applied again whenever argus
-- (re)creates objects: nothing for PUBLIC; the group roles get what their kind may do;
-- single roles what argus_catalog.grants records. Does nothing before roles exist.
CREATE OR REPLACE FUNCTION argus.apply_privileges() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_prefix text := (SELECT role_prefix FROM argus_catalog.settings);
    v_reader text := v_prefix || '_reader';
    v_writer text := v_prefix || '_writer';
    v_registrar text := v_prefix || '_registrar';
    v_grant record;
    v_roles text;
    v_writing text := 'argus.run_cycle(boolean), argus.cycle_report(bigint), argus.cycle(boolean), '
                      'argus.reoptimize_due(bigint), argus.replan_triggered(bigint), '
                      'argus.claim_load(text, text, text), '
                      'argus.count_load(text, text, bigint), '
                      'argus.sweep_staging(), argus.prepare_staging(text, text), '
                      'argus.drop_staging(text, text), argus.commit_staged(text, text, text), '
                      'argus.loaded(text, text), argus.node_timeout(), '
                      'argus.record_rollback(text)';
BEGIN
    IF v_prefix IS NULL THEN
        RETURN;
    END IF;
    SELECT string_agg(DISTINCT quote_ident(r), ', ') INTO v_roles
      FROM (SELECT unnest(ARRAY[v_reader, v_writer, v_registrar]) UNION
            SELECT role FROM argus_catalog.grants) AS roles(r);
    -- nothing for PUBLIC: not the schemas, not argus's functions
    EXECUTE 'REVOKE ALL ON SCHEMA argus, argus_catalog, argus_streams, argus_inbox, argus_net, '
            'argus_results, argus_changes, argus_staging, argus_log FROM PUBLIC';
    EXECUTE 'REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA argus, argus_net FROM PUBLIC';
    -- every role of argus: who it is, the streams it may see, the clock (what
    -- argus_now() and views reading the clock need), a readable query's status
    EXECUTE format('GRANT USAGE ON SCHEMA argus, argus_catalog TO %s', v_roles);
    EXECUTE format('GRANT SELECT ON argus_catalog.clock TO %s', v_roles);
    EXECUTE format('GRANT EXECUTE ON FUNCTION argus.clock_now(), argus.clock_previous(), '
                   'argus.argus_now(), argus.numeric_sqrt(numeric), '
                   'argus.one_row(bigint, anyelement), argus.stream_schemas(), '
                   'argus.session_info(), argus.query_status(text), argus.intact(), '
                   'argus.answer_ok(text), '
                   'argus.readable_query(text), argus.changed_queries(bigint), '
                   'argus.position(), argus.subscribe(text, text), argus.log_since(text), '
                   'argus.check_position(text, bigint, bigint), '
                   'argus.changes_since(text, bigint), argus.acknowledge(text, text, bigint), '
                   'argus.unsubscribe(text, text) TO %s', v_roles);
    -- readers: every query's answer and changes, and the catalog views
    EXECUTE format('GRANT USAGE ON SCHEMA argus_results, argus_changes, argus_log TO %I',
                   v_reader);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA argus_results, argus_changes, argus_log '
                   'TO %I', v_reader);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA argus TO %I', v_reader);
    -- writers: every inbox, loads and cycles
    EXECUTE format('GRANT USAGE ON SCHEMA argus_inbox, argus_staging TO %I', v_writer);
    EXECUTE format('GRANT INSERT ON ALL TABLES IN SCHEMA argus_inbox TO %I', v_writer);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', v_writing, v_writer);
    -- registrars: their own requests
    EXECUTE format('GRANT SELECT, INSERT (kind, name, body) ON argus_catalog.requests TO %I',
                   v_registrar);
    EXECUTE format('GRANT EXECUTE ON FUNCTION argus.register(text, text, text), '
                   'argus.unregister(text), argus.create_stream(text, json, text), '
                   'argus.drop_stream(text), argus.request_turn() TO %I', v_registrar);
    -- single roles
    FOR v_grant IN SELECT * FROM argus_catalog.grants LOOP
        IF v_grant.kind = 'reader' AND v_grant.query IS NOT NULL THEN
            EXECUTE format('GRANT USAGE ON SCHEMA argus_results, argus_changes TO %I',
                           v_grant.role);
            EXECUTE format('GRANT SELECT ON argus_results.%I, argus_changes.%I TO %I',
                           v_grant.query, v_grant.query, v_grant.role);
            IF to_regclass(format('argus_log.%I', v_grant.query)) IS NOT NULL THEN
                EXECUTE format('GRANT USAGE ON SCHEMA argus_log TO %I', v_grant.role);
                EXECUTE format('GRANT SELECT ON argus_log.%I TO %I', v_grant.query,
                               v_grant.role);
            END IF;
        ELSIF v_grant.kind = 'reader' THEN
            EXECUTE format('GRANT USAGE ON SCHEMA argus_streams TO %I', v_grant.role);
            EXECUTE format('GRANT SELECT ON argus_streams.%I TO %I', v_grant.stream, v_grant.role);
        ELSE
            EXECUTE format('GRANT USAGE ON SCHEMA argus_inbox, argus_staging TO %I',
                           v_grant.role);
            EXECUTE format('GRANT INSERT ON argus_inbox.%I TO %I', v_grant.stream, v_grant.role);
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', v_writing, v_grant.role);
        END IF;
    END LOOP;
END $$;

-- Who is this session, for argus (argus.roles.session): the catalog's versions, the
-- role prefix, and whether the session's role may act as the owner of argus's objects.
CREATE OR REPLACE FUNCTION argus.session_info()
RETURNS TABLE (version int, catalog_code text, code_version int, role_prefix text,
               owner boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
    SELECT (SELECT max(v.version) FROM argus_catalog.schema_version v), p.catalog_code,
           p.code_version, s.role_prefix,
           pg_has_role(session_user, (SELECT nspowner FROM pg_namespace
                                       WHERE nspname = 'argus_catalog'), 'USAGE')
      FROM argus_catalog.settings s, argus_catalog.program_state p
$$;

-- The time limit of a cycle's statements (settings.node_timeout), for whoever runs
-- cycles: the client arms it (argus.cycle.run), as a statement cannot arm its own.
CREATE OR REPLACE FUNCTION argus.node_timeout() RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
    SELECT (extract(epoch FROM node_timeout) * 1000)::bigint::text
      FROM argus_catalog.settings
$$;

-- Derived state (settings.durability, derived_intact): true while the network's unlogged
-- tables hold its state; raises (every results view calls it) after a crash emptied
-- them, until argus's owner rebuilds them (argus.network.durability), so that no answer
-- is read empty or partial.
CREATE OR REPLACE FUNCTION argus.intact() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM argus_catalog.derived_intact)
       AND (SELECT durability FROM argus_catalog.settings) = 'derived' THEN
        RAISE EXCEPTION 'argus: the network''s state is being rebuilt after a crash; '
                        'answers and cycles wait for it'
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'argus''s owner rebuilds it from the stream histories when it '
                           'next connects or runs a cycle (argus run)';
    END IF;
    RETURN true;
END $$;

-- Every table of the network's state (argus_net, deltas aside: always unlogged) made
-- UNLOGGED or LOGGED as settings.durability says (only node p_node's, if given), and
-- results views made before argus.intact() existed guarded by it. On Citus they stay
-- logged (its views run argus.intact() on the workers, which have no argus). The
-- number of tables changed.
CREATE OR REPLACE FUNCTION argus.persist_derived(p_node bigint DEFAULT NULL) RETURNS int
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_derived boolean := (SELECT durability = 'derived' FROM argus_catalog.settings);
    v_table regclass;
    v_view record;
    v_changed int := 0;
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN
        IF v_derived AND p_node IS NULL THEN
            RAISE EXCEPTION 'argus: on Citus the network''s tables stay logged '
                            '(durability logged)' USING ERRCODE = 'feature_not_supported';
        END IF;
        RETURN 0;
    END IF;
    FOR v_table IN
        SELECT c.oid::regclass FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
         WHERE s.nspname = 'argus_net' AND c.relkind = 'r' AND c.relname !~ '_delta$'
           AND c.relpersistence = CASE WHEN v_derived THEN 'p' ELSE 'u' END
           AND (p_node IS NULL OR c.relname ~ ('^n' || p_node || '(_|$)'))
    LOOP
        EXECUTE format('ALTER TABLE %s SET %s', v_table,
                       CASE WHEN v_derived THEN 'UNLOGGED' ELSE 'LOGGED' END);
        v_changed := v_changed + 1;
    END LOOP;
    IF v_derived AND p_node IS NULL THEN
        FOR v_view IN
            SELECT c.oid::regclass AS view, pg_get_viewdef(c.oid) AS def
              FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
             WHERE s.nspname = 'argus_results' AND c.relkind = 'v'
               AND pg_get_viewdef(c.oid) !~ 'argus\.intact\(\)'
        LOOP
            EXECUTE format('CREATE OR REPLACE VIEW %s AS SELECT * FROM (%s) AS argus_v '
                           'WHERE argus.intact()', v_view.view, rtrim(v_view.def, '; '));
        END LOOP;
        INSERT INTO argus_catalog.derived_intact DEFAULT VALUES ON CONFLICT DO NOTHING;
    END IF;
    RETURN v_changed;
END $$;

-- A query's status for whoever may read its answer. PL/pgSQL, not SQL, so that a
-- session plans its statement once, not at every read (a SQL function with a SET clause
-- is planned at each call).
CREATE OR REPLACE FUNCTION argus.query_status(p_name text)
RETURNS TABLE (status text, error text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT q.status, concat_ws('; row: ', q.error, q.culprit)
      FROM argus_catalog.queries q
     WHERE q.name = p_name
       AND has_table_privilege(session_user, format('argus_results.%I', q.name), 'SELECT');
END $$;

-- A read's check of the query it reads, in the read's own statement (argus.api: `WHERE
-- argus.answer_ok(name)`, evaluated once, before any row): true for a query that
-- answers; an error naming its isolation otherwise (SQLSTATE AR001, the error as its
-- message, the status as its hint), or AR002 for one dropped meanwhile or not the
-- session's to read (argus.query_status's answer, without a round trip of its own).
CREATE OR REPLACE FUNCTION argus.answer_ok(p_name text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_status text;
    v_error text;
BEGIN
    SELECT s.status, s.error INTO v_status, v_error FROM argus.query_status(p_name) AS s;
    IF v_status IS NULL THEN
        RAISE EXCEPTION 'argus: unknown query %', p_name USING ERRCODE = 'AR002';
    ELSIF v_status <> 'ok' THEN
        RAISE EXCEPTION '%', v_error USING ERRCODE = 'AR001', HINT = v_status;
    END IF;
    RETURN true;
END $$;

-- Spark loads (argus.loads): a staging table per stream and load id, named by a digest
-- of both, created and dropped by the owner for whoever may load the stream, and its
-- rows moved into the inbox once. A load holds pg_advisory_lock(0x41524C44,
-- hashtext(stream.id)) from staging to commit; another session's load of the same id
-- into the same stream is refused here.
CREATE OR REPLACE FUNCTION argus.staging_name(p_stream text, p_load_id text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT 'load_' || left(encode(sha256(convert_to(p_stream || '.' || p_load_id, 'UTF8')),
                                  'hex'), 20)
$$;

CREATE OR REPLACE FUNCTION argus.hold_load(p_load_id text, p_stream text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT has_table_privilege(session_user, format('argus_inbox.%I', p_stream), 'INSERT') THEN
        RAISE EXCEPTION 'argus: permission denied to load into stream %', p_stream
              USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT pg_try_advisory_xact_lock(1095912516, hashtext(p_stream || '.' || p_load_id)) THEN
        RAISE EXCEPTION 'argus: load % is running in another session', p_load_id
              USING ERRCODE = 'lock_not_available';
    END IF;
END $$;

CREATE OR REPLACE FUNCTION argus.prepare_staging(p_stream text, p_load_id text)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_table text := argus.staging_name(p_stream, p_load_id);
BEGIN
    PERFORM argus.hold_load(p_load_id, p_stream);
    EXECUTE format('DROP TABLE IF EXISTS argus_staging.%I', v_table);
    EXECUTE format('CREATE UNLOGGED TABLE argus_staging.%I (LIKE argus_inbox.%I INCLUDING '
                   'DEFAULTS INCLUDING CONSTRAINTS, argus_part int, argus_row bigint)',
                   v_table, p_stream);
    -- a table's changes are numbered in its inbox (argus_seq, an identity LIKE leaves
    -- out): staged without it (every load into a table failed on its NOT NULL; a helper)
    EXECUTE format('ALTER TABLE argus_staging.%I DROP COLUMN IF EXISTS argus_seq', v_table);
    EXECUTE format('GRANT INSERT, SELECT ON argus_staging.%I TO %I', v_table, session_user);
    INSERT INTO argus_catalog.staging (load_id, stream, table_name)
    VALUES (p_load_id, p_stream, v_table)
    ON CONFLICT (stream, load_id) DO UPDATE SET table_name = EXCLUDED.table_name,
                                                created_at = now();
    RETURN v_table;
END $$;

CREATE OR REPLACE FUNCTION argus.drop_staging(p_stream text, p_load_id text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    IF EXISTS (SELECT FROM argus_catalog.staging
                WHERE stream = p_stream AND load_id = p_load_id) THEN
        PERFORM argus.hold_load(p_load_id, p_stream);
        EXECUTE format('DROP TABLE IF EXISTS argus_staging.%I',
                       argus.staging_name(p_stream, p_load_id));
        DELETE FROM argus_catalog.staging WHERE stream = p_stream AND load_id = p_load_id;
    END IF;
END $$;

-- The staged rows into the inbox, each (partition, position) once: the rows moved, or
-- NULL if the id was loaded before (then nothing is moved).
CREATE OR REPLACE FUNCTION argus.commit_staged(p_stream text, p_load_id text, p_source text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_columns text;
    v_rows bigint;
BEGIN
    PERFORM argus.hold_load(p_load_id, p_stream);
    IF NOT argus.claim_load(p_load_id, p_stream, p_source) THEN
        PERFORM argus.drop_staging(p_stream, p_load_id);
        RETURN NULL;
    END IF;
    SELECT string_agg(quote_ident(c.name), ', ' ORDER BY c.position) INTO v_columns
      FROM argus_catalog.stream_columns c JOIN argus_catalog.streams s USING (stream_id)
     WHERE s.name = p_stream;
    EXECUTE format('INSERT INTO argus_inbox.%I (%s) SELECT %s FROM (SELECT DISTINCT ON '
                   '(argus_part, argus_row) * FROM argus_staging.%I) AS staged',
                   p_stream, v_columns, v_columns, argus.staging_name(p_stream, p_load_id));
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    PERFORM argus.count_load(p_load_id, p_stream, v_rows);
    PERFORM argus.drop_staging(p_stream, p_load_id);
    RETURN v_rows;
END $$;

-- Was this load id loaded into this stream before? Asked only by who may load it.
CREATE OR REPLACE FUNCTION argus.loaded(p_load_id text, p_stream text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
BEGIN
    IF NOT coalesce(has_table_privilege(session_user,
                                        to_regclass(format('argus_inbox.%I', p_stream)),
                                        'INSERT'), false) THEN
        RAISE EXCEPTION 'argus: permission denied to load into stream %', p_stream
              USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN EXISTS (SELECT 1 FROM argus_catalog.loads
                    WHERE stream = p_stream AND load_id = p_load_id);
END $$;

-- Continuous results (change_logs, consumers; argus.subscriptions) --------------------

-- A query the session's role may read, by name; an error naming it otherwise.
CREATE OR REPLACE FUNCTION argus.readable_query(p_name text) RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_query bigint;
BEGIN
    SELECT query_id INTO v_query FROM argus_catalog.queries
     WHERE name = p_name AND argus.may_read_query(p_name);
    IF v_query IS NULL THEN
        RAISE EXCEPTION 'argus: no query named % that this role may read', quote_literal(p_name)
              USING ERRCODE = 'undefined_object',
                    HINT = 'SELECT name FROM argus.queries lists them';
    END IF;
    RETURN v_query;
END $$;

-- The payload of the notification on channel argus_cycle after a committed cycle: its
-- run id and, where `p_names` (no role was granted single queries: whoever may read
-- one may list them all, argus.queries), the queries whose answers changed, as many as
-- fit under PostgreSQL's 8,000 bytes ("truncated": the others did not). Otherwise
-- listeners ask argus.changed_queries(run), which names only those they may read.
CREATE OR REPLACE FUNCTION argus.cycle_payload(p_run bigint, p_queries json, p_names boolean)
RETURNS text LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_names text[] := '{}';
    v_name  text;
    v_size  int := 0;
BEGIN
    IF NOT p_names THEN
        RETURN json_build_object('run', p_run)::text;
    END IF;
    FOR v_name IN SELECT k FROM json_object_keys(coalesce(p_queries, '{}')) AS k ORDER BY k LOOP
        v_size := v_size + octet_length(to_json(v_name)::text) + 2;
        IF v_size > 7500 THEN
            RETURN json_build_object('run', p_run, 'queries', v_names, 'truncated', true)::text;
        END IF;
        v_names := v_names || v_name;
    END LOOP;
    RETURN json_build_object('run', p_run, 'queries', v_names, 'truncated', false)::text;
END $$;

-- The queries whose answers cycle `p_run` changed, of those the session's role may read.
CREATE OR REPLACE FUNCTION argus.changed_queries(p_run bigint) RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
    SELECT k FROM argus_catalog.runs r, json_object_keys(coalesce(r.queries, '{}')) AS k
     WHERE r.run_id = p_run AND argus.may_read_query(k) ORDER BY k
$$;

-- The position a consumer is at when it reads the answer: the last cycle this
-- transaction's snapshot sees (argus.subscriptions reads it and the answer in one
-- REPEATABLE READ snapshot).
CREATE OR REPLACE FUNCTION argus.position() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
    SELECT coalesce(max(run_id), 0) FROM argus_catalog.runs
$$;

-- A cycle's changes of the subscribed queries it changed, appended to their logs at
-- the cycle's position, read from their changes views (net, whatever keeps them: a
-- clock, a migration, a deferred join); then, every 16th cycle (a DELETE per log and
-- cycle costs more than the rows it removes), each log cut below what every named consumer has acknowledged,
-- or what is older than `p_keep`.
CREATE OR REPLACE FUNCTION argus.log_changes(p_run bigint, p_queries json, p_keep interval)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_log  record;
    v_aged bigint := (SELECT max(run_id) FROM argus_catalog.runs
                       WHERE p_run % 16 = 0 AND finished_at < now() - p_keep);
    v_cut  bigint;
BEGIN
    FOR v_log IN SELECT l.query_id, q.name, l.since,
                        (SELECT min(c.position) FROM argus_catalog.consumers c
                          WHERE c.query_id = l.query_id AND p_run % 16 = 0) AS acknowledged
                   FROM argus_catalog.change_logs l JOIN argus_catalog.queries q USING (query_id)
                  WHERE p_run % 16 = 0 OR (p_queries::jsonb) ? q.name
    LOOP
        IF (p_queries::jsonb) ? v_log.name THEN
            EXECUTE format('INSERT INTO argus_log.%I SELECT $1, c.* FROM argus_changes.%I AS c',
                           v_log.name, v_log.name) USING p_run;
        END IF;
        v_cut := greatest(v_log.acknowledged, v_aged);
        IF p_run % 16 = 0 AND v_cut > v_log.since THEN
            EXECUTE format('DELETE FROM argus_log.%I WHERE argus_position <= $1', v_log.name)
              USING v_cut;
            UPDATE argus_catalog.change_logs SET since = v_cut WHERE query_id = v_log.query_id;
        END IF;
    END LOOP;
END $$;

-- Keep query `p_query`'s changes from now on (a table argus_log.<query> of them), and,
-- with `p_consumer`, a named consumer's position: where it left off, or, new (or not
-- past the answer it started from), the last cycle and new_consumer: it starts from
-- the answer (argus.subscriptions). Waits for a running cycle, so that no cycle's
-- changes fall between the position and the log.
CREATE OR REPLACE FUNCTION argus.subscribe(p_query text, p_consumer text DEFAULT NULL)
RETURNS TABLE (log_position bigint, new_consumer boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_query    bigint := argus.readable_query(p_query);
    v_position bigint;
    v_new      boolean := p_consumer IS NULL;
BEGIN
    -- the cycle lock only to make the log (no cycle commits between its position and
    -- its first change), held to the caller's transaction's end: a reader subscribing
    -- in a transaction it kept busy held every cycle up (a helper)
    IF NOT EXISTS (SELECT FROM argus_catalog.change_logs WHERE query_id = v_query) THEN
        PERFORM argus.cycle_lock();
    END IF;
    v_position := argus.position();
    IF NOT EXISTS (SELECT FROM argus_catalog.change_logs WHERE query_id = v_query) THEN
        EXECUTE format('CREATE TABLE argus_log.%I AS SELECT 0::bigint AS argus_position, c.* '
                       'FROM argus_changes.%I AS c WITH NO DATA', p_query, p_query);
        EXECUTE format('CREATE INDEX ON argus_log.%I (argus_position)', p_query);
        INSERT INTO argus_catalog.change_logs (query_id, since) VALUES (v_query, v_position);
        PERFORM argus.apply_privileges();  -- its readers may read its log
    END IF;
    IF p_consumer IS NOT NULL THEN  -- new, or not past its first answer: from the answer
        INSERT INTO argus_catalog.consumers (query_id, consumer)
        VALUES (v_query, p_consumer) ON CONFLICT DO NOTHING;
        PERFORM argus.own_consumer(v_query, p_query, p_consumer);
        SELECT coalesce(c.position, v_position), c.position IS NULL INTO v_position, v_new
          FROM argus_catalog.consumers c
         WHERE c.query_id = v_query AND c.consumer = p_consumer;
    END IF;
    RETURN QUERY SELECT v_position, v_new;
END $$;

-- The oldest position a reader of query `p_query`'s log may resume from (the log holds
-- every change after it); an error if the query has no log.
CREATE OR REPLACE FUNCTION argus.log_since(p_query text) RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_since bigint;
BEGIN
    SELECT since INTO v_since FROM argus_catalog.change_logs
     WHERE query_id = argus.readable_query(p_query);
    IF v_since IS NULL THEN
        RAISE EXCEPTION 'argus: query % keeps no log of its changes', quote_literal(p_query)
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = format('SELECT * FROM argus.subscribe(%L) starts one', p_query);
    END IF;
    RETURN v_since;
END $$;

-- Raises unless a reader that has every change up to `p_position` can go on from the
-- log (`p_since`: argus.log_since, read after the changes).
CREATE OR REPLACE FUNCTION argus.check_position(p_query text, p_position bigint, p_since bigint)
RETURNS void LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_position < p_since THEN
        RAISE EXCEPTION 'argus: the changes of query % after position % are no longer kept '
                        '(the log holds those after position %)', quote_literal(p_query),
                        p_position, p_since
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'start again from the current answer (a new consumer, or no '
                           'position); the log drops changes older than keep_changes (argus '
                           'config keep_changes), and starts again when the query is retried';
    END IF;
END $$;

-- Query `p_query`'s changes after position `p_position`, in order (a cycle's
-- retractions before its insertions), each row as jsonb (for any client;
-- argus.subscriptions reads argus_log.<query> with its types).
CREATE OR REPLACE FUNCTION argus.changes_since(p_query text, p_position bigint)
RETURNS TABLE (log_position bigint, sign smallint, change jsonb)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_rows bigint;
BEGIN
    PERFORM argus.log_since(p_query);  -- (a clear error if it has no log)
    RETURN QUERY EXECUTE format(
        'SELECT l.argus_position, l.argus_sign, to_jsonb(l) - ''argus_position'' - ''argus_sign'' '
        'FROM argus_log.%I AS l WHERE l.argus_position > $1 '
        'ORDER BY l.argus_position, l.argus_sign',
        p_query) USING p_position;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    -- read after the rows: a cut that took rows this read needed is seen
    PERFORM argus.check_position(p_query, p_position, argus.log_since(p_query));
    IF v_rows = 0 THEN  -- nothing more: an isolated query logs nothing until retried
        PERFORM argus.check_running(p_query);
    END IF;
END $$;

-- Raises for a query that failed and is isolated (its answer and log stand still).
CREATE OR REPLACE FUNCTION argus.check_running(p_query text) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_error text;
BEGIN
    SELECT concat_ws('; row: ', q.error, q.culprit) INTO v_error FROM argus_catalog.queries q
     WHERE q.query_id = argus.readable_query(p_query) AND q.status <> 'ok';
    IF FOUND THEN
        RAISE EXCEPTION 'argus: query % failed and is isolated: its changes stop until it '
                        'runs again: %', quote_literal(p_query), v_error
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = format('fix what failed, then: argus retry %s', p_query);
    END IF;
END $$;

-- A named consumer has every change of query `p_query` up to `p_position`: the log
-- may drop them once every consumer has them. Call it in the transaction that
-- applies them, and a consumer that crashes resumes exactly where it left off.
CREATE OR REPLACE FUNCTION argus.acknowledge(p_query text, p_consumer text, p_position bigint)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_query bigint := argus.readable_query(p_query);
BEGIN
    PERFORM argus.own_consumer(v_query, p_query, p_consumer);
    UPDATE argus_catalog.consumers
       SET position = greatest(position, least(p_position, argus.position())),
           acknowledged_at = now()
     WHERE query_id = v_query AND consumer = p_consumer;
END $$;

-- Raises unless query `p_query` (id `p_query_id`) has a consumer named `p_consumer`
-- that the session's role may move or forget: the role's that made it (or one it is a
-- member of), or any for argus's owner.
CREATE OR REPLACE FUNCTION argus.own_consumer(p_query_id bigint, p_query text,
                                              p_consumer text) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_by name;
BEGIN
    SELECT created_by INTO v_by FROM argus_catalog.consumers
     WHERE query_id = p_query_id AND consumer = p_consumer;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'argus: query % has no consumer named %', quote_literal(p_query),
              quote_literal(p_consumer) USING ERRCODE = 'undefined_object',
              HINT = format('SELECT * FROM argus.subscribe(%L, %L) adds it', p_query, p_consumer);
    END IF;
    IF NOT (pg_has_role(session_user, current_user, 'MEMBER')
            OR EXISTS (SELECT FROM pg_roles WHERE rolname = v_by)
               AND pg_has_role(session_user, v_by, 'MEMBER')) THEN
        RAISE EXCEPTION 'argus: consumer % of query % is role %''s: role % may not move or '
                        'forget it', quote_literal(p_consumer), quote_literal(p_query),
                        quote_ident(v_by), quote_ident(session_user)
              USING ERRCODE = 'insufficient_privilege',
                    HINT = 'name a consumer of your own';
    END IF;
END $$;

-- Forget a consumer of query `p_query`; with none named, the query's whole log (for
-- argus's owner).
CREATE OR REPLACE FUNCTION argus.unsubscribe(p_query text, p_consumer text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
DECLARE
    v_query bigint := argus.readable_query(p_query);
BEGIN
    IF p_consumer IS NOT NULL THEN
        PERFORM argus.own_consumer(v_query, p_query, p_consumer);
        DELETE FROM argus_catalog.consumers WHERE query_id = v_query AND consumer = p_consumer;
    ELSIF pg_has_role(session_user, current_user, 'MEMBER') THEN
        PERFORM argus.cycle_lock();
        DELETE FROM argus_catalog.change_logs WHERE query_id = v_query;
        EXECUTE format('DROP TABLE IF EXISTS argus_log.%I', p_query);
    ELSE
        RAISE EXCEPTION 'argus: only argus''s owner drops a query''s change log'
              USING ERRCODE = 'insufficient_privilege';
    END IF;
END $$;

-- Loads wake `argus run --follow` (LISTEN argus_rows): each statement writing an inbox
-- notifies once, when it commits (sql_templates/stream/notify_rows.sql; the inboxes of
-- streams made before it get the trigger here).
CREATE OR REPLACE FUNCTION argus.rows_arrived() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pg_notify('argus_rows', TG_TABLE_NAME);
    RETURN NULL;
END $$;
DO $$
DECLARE
    v_inbox regclass;
BEGIN
    FOR v_inbox IN SELECT c.oid::regclass FROM pg_class c
                     JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = 'argus_inbox' AND c.relkind = 'r'
                      AND NOT EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = c.oid
                                         AND t.tgname = 'argus_rows')
    LOOP
        EXECUTE format('CREATE TRIGGER argus_rows AFTER INSERT ON %s FOR EACH STATEMENT '
                       'EXECUTE FUNCTION argus.rows_arrived()', v_inbox);
    END LOOP;
END $$;

-- Registration from SQL: a request (argus_catalog.requests), as a registrar's, from
-- whoever may make one (the owner, registrars), returning its id; an owner's argus
-- process carries it out: `argus worker`, `argus run --follow`, the next `argus run`.
-- (Registering parses and plans the query in Python: SQL alone cannot. A cycle run
-- from SQL says when requests wait: argus.run_cycle.)
CREATE OR REPLACE FUNCTION argus.register(p_name text, p_sql text, p_evaluate text DEFAULT NULL)
RETURNS bigint LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO argus_catalog.requests (kind, name, body)
    VALUES ('register', p_name, jsonb_strip_nulls(jsonb_build_object('sql', p_sql,
                                                                     'evaluate', p_evaluate)))
    RETURNING request_id
$$;
CREATE OR REPLACE FUNCTION argus.unregister(p_name text) RETURNS bigint
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO argus_catalog.requests (kind, name, body) VALUES ('unregister', p_name, '{}')
    RETURNING request_id
$$;
-- p_columns: '{"column": "type", …}', json (not jsonb: its keys keep their order)
CREATE OR REPLACE FUNCTION argus.create_stream(p_name text, p_columns json,
                                               p_time_column text DEFAULT NULL)
RETURNS bigint LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO argus_catalog.requests (kind, name, body)
    VALUES ('create_stream', p_name, jsonb_strip_nulls(jsonb_build_object(
                'columns', (SELECT jsonb_agg(jsonb_build_array(c.key, c.value) ORDER BY c.n)
                              FROM json_each_text(p_columns) WITH ORDINALITY AS c(key, value, n)),
                'time_column', p_time_column)))
    RETURNING request_id
$$;
CREATE OR REPLACE FUNCTION argus.drop_stream(p_name text) RETURNS bigint
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO argus_catalog.requests (kind, name, body) VALUES ('drop_stream', p_name, '{}')
    RETURNING request_id
$$;

-- A cycle the server rolled back whole (runs.status 'rolled_back'), recorded by
-- the client that ran it: a run of its own, with the error.
CREATE OR REPLACE FUNCTION argus.record_rollback(p_error text) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $$
    INSERT INTO argus_catalog.runs (started_at, finished_at, status, error)
    VALUES (now(), clock_timestamp(), 'rolled_back', left(p_error, 2000))
    RETURNING run_id
$$;
