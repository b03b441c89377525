-- argus_changes.<query> (changes_view.sql): what the last cycle changed, one row per
-- inserted (+1) or retracted (-1) copy; nothing until a cycle ran after the query was
-- registered (run {after}): a node it shares holds the changes of a cycle it was not
-- part of.
SELECT {exprs}, {t1}.{sign} FROM {delta} AS {t1}
 WHERE EXISTS (SELECT FROM argus_catalog.runs WHERE run_id > {after} AND status = 'ok')
