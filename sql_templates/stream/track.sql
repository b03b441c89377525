-- Change capture (argus track): every statement on the source writes its changes into
-- the table's inbox, in the writer's own transaction (a rollback takes them back):
-- inserted rows as 'i'; updated rows as 'u', unless unchanged (their bytes: `*<>`, as
-- REFRESH MATERIALIZED VIEW CONCURRENTLY compares rows, not their text, which the
-- writer's settings shape: 0.3 and 0.30000000000000004 print alike with
-- extra_float_digits = 0), or as 'i' and 'd' where the update changed the key; deleted rows' keys as 'd'; a TRUNCATE as a 'd' of every
-- key argus holds. The source's key makes these consistent, so the inbox's own check
-- of each load (stream/table_check) is skipped: argus.capture is on while it runs.
-- The rows' aliases have argus's prefix, which no column may have: `o *<> n` over a
-- table with a column n compared that column, or failed as ambiguous.
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $argus$
BEGIN
    -- a column retyped since `track`: its rows would be cast to the inbox's type by the
    -- new type's cast, which whoever may alter the table wrote, run as argus's owner
    -- (this function's rights; found by a helper), or cut to its old length or scale
    -- (a varchar widened, a numeric's scale raised: a helper): the statement is refused
    IF EXISTS (SELECT FROM pg_catalog.pg_attribute s
                 JOIN pg_catalog.pg_attribute i
                   ON i.attrelid = {inbox_name}::pg_catalog.regclass
                  AND i.attname OPERATOR(pg_catalog.=) s.attname
                WHERE s.attrelid OPERATOR(pg_catalog.=) TG_RELID
                  AND s.attnum OPERATOR(pg_catalog.>) 0 AND NOT s.attisdropped
                  AND (s.atttypid OPERATOR(pg_catalog.<>) i.atttypid
                       OR s.atttypmod OPERATOR(pg_catalog.<>) i.atttypmod)) THEN
        RAISE EXCEPTION 'argus: a column of %.% changed its type since argus began to '
                        'track it', TG_TABLE_SCHEMA, TG_TABLE_NAME
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'argus untrack the table, then argus track it again';
    END IF;
    PERFORM set_config('argus.capture', 'on', true);
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {inbox} ({columns}, argus_op) SELECT {columns}, 'i' FROM argus_new;
    ELSIF TG_OP = 'UPDATE' THEN  -- planned for each statement's rows (EXECUTE): a plan
        -- kept from a one-row statement would join 10,000 rows by nested loops
        EXECUTE $update$
        INSERT INTO {inbox} ({columns}, argus_op)
        SELECT {n_columns}, CASE WHEN argus_o.{first} IS NULL THEN 'i' ELSE 'u' END
          FROM argus_new argus_n LEFT JOIN argus_old argus_o ON {o_join}
         WHERE argus_o.{first} IS NULL OR argus_o *<> argus_n
        UNION ALL
        SELECT {o_key_only}, 'd' FROM argus_old argus_o
         WHERE NOT EXISTS (SELECT FROM argus_new argus_n WHERE {o_join})
        $update$;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO {inbox} ({key}, argus_op) SELECT {key}, 'd' FROM argus_old;
    ELSE
        {truncate};
        -- (the source's new file is no rewrite: argus.note_rewritten)
        UPDATE argus_catalog.tracked SET filenode = pg_catalog.pg_relation_filenode(TG_RELID)
         WHERE source OPERATOR(pg_catalog.=) TG_RELID;
    END IF;
    PERFORM set_config('argus.capture', 'off', true);
    RETURN NULL;
END $argus$;
