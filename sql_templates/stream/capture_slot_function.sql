-- Capture by a logical replication slot (argus track --method slot): the changes of
-- the database's tracked tables that committed before p_upto and after the slot's
-- position, decoded from pgoutput's messages (protocol 1: every value as text) into one
-- row per insert, update, delete or truncated table, its tuples as jsonb of text by
-- column name, and one per description of a table (op 'R': each column's type oid and
-- modifier, "oid/typmod", which argus.read_capture checks against the tracked ones).
-- The values are written in the styles argus.read_capture reads them in (a session's
-- DateStyle could write an ambiguous zone abbreviation, its extra_float_digits round).
-- First the slot moves up to p_applied, the position the last committed cycle
-- recorded: a slot's moves are not transactional, so it moves only past changes already
-- in the inboxes, and a cycle that fails reads the same changes again.
--
-- Reading a slot needs the REPLICATION attribute, which argus's owner role lacks: the
-- function runs with the rights of the role that tracked the table, and only the owner
-- role may call it. Its body calls nothing of argus's (the owner's code), and names
-- only pg_catalog.
--
-- An update that left a TOASTed value alone sends 'u' for it: the old tuple (REPLICA
-- IDENTITY FULL, which track requires of tables that can have such values) has it;
-- without one, or with the key's alone ('K': an update of the key once the identity
-- went back to DEFAULT, whose values were taken as NULL; a helper), the column is named
-- in `missing`.
CREATE FUNCTION {function}(p_applied pg_lsn, p_upto pg_lsn)
RETURNS TABLE (ord bigint, lsn pg_lsn, relid oid, op "char", new jsonb, old jsonb,
               missing text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off
SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres' SET extra_float_digits = 3
SET bytea_output = 'hex' AS $argus$
DECLARE
    m       record;
    d       bytea;
    p       int;
    k       "char";
    n       int;
    i       int;
    j       int;
    len     int;
    v_names jsonb := jsonb_build_object();  -- relation oid -> its columns' names
    v_rel   oid;
    v_cols  text[];
    v_types text[];
    v_vals  text[];
    v_old   text[];
    v_whole boolean := false;  -- v_old is the whole old row (REPLICA IDENTITY FULL)
    v_tag   "char";
    v_enc   name := getdatabaseencoding();
BEGIN
    IF (SELECT s.confirmed_flush_lsn < p_applied FROM pg_replication_slots s
         WHERE s.slot_name = {slot}) THEN
        PERFORM pg_replication_slot_advance({slot}, p_applied);
    END IF;
    ord := 0;
    FOR m IN SELECT c.lsn, c.data FROM pg_logical_slot_peek_binary_changes(
                 {slot}, p_upto, NULL, 'proto_version', '1', 'publication_names', {publication}) c
    LOOP
        d := m.data;
        k := chr(get_byte(d, 0));
        CONTINUE WHEN k NOT IN ('R', 'I', 'U', 'D', 'T');
        v_rel := ((get_byte(d, 1)::bigint << 24) | (get_byte(d, 2) << 16)
                  | (get_byte(d, 3) << 8) | get_byte(d, 4))::oid;
        ord := ord + 1;
        lsn := m.lsn;
        relid := v_rel;
        op := k;
        new := NULL;
        old := NULL;
        missing := NULL;
        IF k = 'R' THEN  -- a relation: oid, schema, name, identity, columns
            p := 5;
            p := p + position('\x00'::bytea IN substring(d FROM p + 1));
            p := p + position('\x00'::bytea IN substring(d FROM p + 1));
            p := p + 1;
            n := (get_byte(d, p) << 8) | get_byte(d, p + 1);
            p := p + 2;
            v_cols := ARRAY[]::text[];
            v_types := ARRAY[]::text[];
            FOR i IN 1..n LOOP  -- flags, name, type oid, type modifier
                j := position('\x00'::bytea IN substring(d FROM p + 2));
                v_cols := v_cols || convert_from(substring(d FROM p + 2 FOR j - 1), v_enc);
                v_types := v_types || (((get_byte(d, p + j + 1)::bigint << 24)
                                        | (get_byte(d, p + j + 2) << 16)
                                        | (get_byte(d, p + j + 3) << 8) | get_byte(d, p + j + 4)
                                       )::text || '/' ||
                                       ((get_byte(d, p + j + 5) << 24)
                                        | (get_byte(d, p + j + 6) << 16)
                                        | (get_byte(d, p + j + 7) << 8) | get_byte(d, p + j + 8)
                                       )::text);
                p := p + 1 + j + 8;
            END LOOP;
            v_names := jsonb_set(v_names, ARRAY[v_rel::text], to_jsonb(v_cols));
            new := jsonb_object(v_cols, v_types);
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF k = 'T' THEN  -- int32 count, int8 options, then the relations' oids
            n := (get_byte(d, 3) << 8) | get_byte(d, 4);
            FOR i IN 0..n - 1 LOOP
                relid := ((get_byte(d, 6 + 4 * i)::bigint << 24) | (get_byte(d, 7 + 4 * i) << 16)
                          | (get_byte(d, 8 + 4 * i) << 8) | get_byte(d, 9 + 4 * i))::oid;
                RETURN NEXT;
                ord := ord + 1;
            END LOOP;
            CONTINUE;
        END IF;
        v_cols := ARRAY(SELECT jsonb_array_elements_text(v_names -> v_rel::text));
        p := 5;
        v_old := NULL;
        v_whole := false;
        LOOP  -- a tuple: 'K' (the key), 'O' (old) or 'N' (new), a count, the values
            v_tag := chr(get_byte(d, p));
            n := (get_byte(d, p + 1) << 8) | get_byte(d, p + 2);
            p := p + 3;
            v_vals := array_fill(NULL::text, ARRAY[n]);
            FOR i IN 1..n LOOP
                CASE chr(get_byte(d, p))
                WHEN 't' THEN
                    len := (get_byte(d, p + 1) << 24) | (get_byte(d, p + 2) << 16)
                           | (get_byte(d, p + 3) << 8) | get_byte(d, p + 4);
                    v_vals[i] := convert_from(substring(d FROM p + 6 FOR len), v_enc);
                    p := p + 5 + len;
                WHEN 'u' THEN  -- from the old tuple, else missing (argus.read_capture)
                    IF NOT v_whole THEN
                        missing := missing || v_cols[i];
                    END IF;
                    v_vals[i] := CASE WHEN v_whole THEN v_old[i] END;
                    p := p + 1;
                ELSE  -- 'n': NULL
                    p := p + 1;
                END CASE;
            END LOOP;
            IF v_tag = 'N' THEN
                new := jsonb_object(v_cols[1:n], v_vals);
                EXIT;
            END IF;
            v_old := v_vals;
            v_whole := v_tag = 'O';
            old := jsonb_object(v_cols[1:n], v_vals);
            EXIT WHEN k = 'D';
        END LOOP;
        RETURN NEXT;
    END LOOP;
    -- Decoding starts where the slot can rebuild its snapshot of running transactions,
    -- which it finds in the WAL: without one logged now (PostgreSQL 16+, a superuser's
    -- right) the next cycles would decode up to 15 s of WAL (the background writer's
    -- interval) again and again.
    IF to_regprocedure('pg_log_standby_snapshot()') IS NOT NULL
       AND has_function_privilege('pg_log_standby_snapshot()', 'EXECUTE') THEN
        PERFORM pg_log_standby_snapshot();
    END IF;
END $argus$;
REVOKE ALL ON FUNCTION {function}(pg_lsn, pg_lsn) FROM PUBLIC
