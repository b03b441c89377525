-- argus_changes.<query> for output columns that read the clock (`argus_now() - t`):
-- when the clock moved, every row of the answer changed. The changes add up all the
-- same: the answer at the new clock, minus the history at the previous clock, plus the
-- delta at the previous clock (the previous answer was the old history, which is the
-- history minus the delta, at the previous clock). Nothing until a cycle ran after the
-- query was registered (changes_view.sql). The clock is read once (on Citus: on the
-- coordinator, before the statement goes to the workers).
SELECT * FROM (
SELECT {exprs}, {t1}.{sign} FROM {delta} AS {t1}
 WHERE (SELECT argus.clock_now()) IS NOT DISTINCT FROM (SELECT argus.clock_previous())
UNION ALL
SELECT {previous}, {t1}.{sign} FROM {delta} AS {t1}
 WHERE (SELECT argus.clock_now()) IS DISTINCT FROM (SELECT argus.clock_previous())
UNION ALL
SELECT {exprs}, 1::smallint FROM {hist} AS {t1}
 WHERE (SELECT argus.clock_now()) IS DISTINCT FROM (SELECT argus.clock_previous())
UNION ALL
SELECT {previous}, -1::smallint FROM {hist} AS {t1}
 WHERE (SELECT argus.clock_now()) IS DISTINCT FROM (SELECT argus.clock_previous())
) AS {t1} WHERE EXISTS (SELECT FROM argus_catalog.runs WHERE run_id > {after} AND status = 'ok')
