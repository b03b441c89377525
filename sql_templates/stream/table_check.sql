-- A load into a table is checked against the declared key, in the load's own
-- statement: two changes to one key, an insert of a key the table has, an update of a
-- key it has not (after the changes waiting before this load) fail it, naming the key;
-- nothing is loaded. (A delete of a key it has not is kept: the cycle finds nothing to
-- delete.) Loads committed concurrently are not seen: their changes are applied in
-- the order of argus_seq, the last one winning. Changes captured from a tracked table
-- (stream/track, argus.capture on) are consistent by the source's key: not checked.
CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on SET transform_null_equals = off AS $argus$
#variable_conflict use_column
DECLARE
    argus_bad record;
BEGIN
    IF current_setting('argus.capture', true) = 'on' THEN
        RETURN NULL;
    END IF;
    SELECT {key}, count(*) AS n INTO argus_bad FROM argus_new GROUP BY {key}
    HAVING count(*) > 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% changes to the key % in one load', argus_bad.n,
              row({bad_key})::text USING ERRCODE = 'unique_violation';
    END IF;
    WITH argus_pending AS (
        SELECT DISTINCT ON ({key}) {key}, argus_op FROM {inbox}
         WHERE argus_seq < (SELECT min(argus_seq) FROM argus_new)
         ORDER BY {key}, argus_seq DESC)
    SELECT n.argus_op, {n_key} INTO argus_bad
      FROM argus_new n
      LEFT JOIN argus_pending p ON {p_join}
      LEFT JOIN {history} h ON {h_join}
     WHERE n.argus_op <> 'd'
       AND (n.argus_op = 'i') = coalesce(p.argus_op <> 'd', h.{first} IS NOT NULL)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% of the key %, which table % %',
              CASE argus_bad.argus_op WHEN 'i' THEN 'an insert' ELSE 'an update' END,
              row({bad_key})::text, {name},
              CASE argus_bad.argus_op WHEN 'i' THEN 'has already (update it instead)'
                   ELSE 'does not have (insert it instead)' END
              USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NULL;
END $argus$;
CREATE TRIGGER argus_key_check AFTER INSERT ON {inbox}
    REFERENCING NEW TABLE AS argus_new FOR EACH STATEMENT EXECUTE FUNCTION {function}()
