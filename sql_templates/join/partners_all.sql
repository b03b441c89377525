-- Each touched left row's partners in the right history, all counted, by one join
-- (join/partners_changed; a condition without a key the right history's index serves).
LEFT JOIN (SELECT {t1}.argus_tid, count(*) AS n FROM l AS {t1} JOIN {right} AS {t2} ON {condition}
                 GROUP BY 1) AS o ON o.argus_tid = {t1}.argus_tid
