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
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $argus$
BEGIN
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
    END IF;
    PERFORM set_config('argus.capture', 'off', true);
    RETURN NULL;
END $argus$;
