-- Signed path, in one statement (one read of the delta): for each row whose copies net
-- to -k this cycle, delete k of its copies from the history; for each whose copies net
-- to +k, insert k copies. A row is its values as they are, not as they compare: of
-- columns whose equal values can differ (numeric 2.00 and 2, float 0 and -0, interval,
-- jsonb: {identity}), the text tells a retracted 2.00 and an inserted 2 apart, and the
-- history ends with the 2. The k copies deleted are read by the hash's index, k at most:
-- a projection holds many copies of a row (TPC-H Q4's join keeps one priority per
-- order, ~1,000 copies each), and numbering them all to take k read them all. (The
-- delete sees the history as it was before the statement, not the copies it inserts.)
WITH n AS MATERIALIZED (
    SELECT {columns}, argus_hash, sum({sign}) AS argus_net FROM {delta}
     GROUP BY {columns}, argus_hash{identity} HAVING sum({sign}) <> 0
), argus_gone AS (
    DELETE FROM {hist} AS h USING (
        SELECT v.argus_tid
          FROM n CROSS JOIN LATERAL (
            SELECT h.ctid AS argus_tid FROM {hist} AS h
             WHERE h.argus_hash = n.argus_hash AND CASE WHEN ROW({h_columns}) IS NOT DISTINCT FROM ROW({n_columns}) THEN true ELSE false END{same_identity}
             LIMIT greatest(-n.argus_net, 0)
          ) AS v
         WHERE n.argus_net < 0
    ) AS victims
    WHERE h.ctid = victims.argus_tid
)
INSERT INTO {hist} ({columns}, argus_hash)
SELECT {n_columns}, n.argus_hash FROM n, generate_series(1, n.argus_net) WHERE n.argus_net > 0
