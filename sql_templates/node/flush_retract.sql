-- Signed path, part 1: for each row whose copies net to -k this cycle, delete k of its
-- copies from the history. A row is its values as they are, not as they compare: of
-- columns whose equal values can differ (numeric 2.00 and 2, float 0 and -0, interval,
-- jsonb: {identity}), the text tells a retracted 2.00 and an inserted 2 apart, and the
-- history ends with the 2. The k copies are read by the hash's index, k at most: a
-- projection holds many copies of a row (TPC-H Q4's join keeps one priority per order,
-- ~1,000 copies of each), and numbering them all to take k read them all.
DELETE FROM {hist} AS h USING (
    SELECT v.argus_tid
      FROM (SELECT {columns}, argus_hash, sum({sign}) AS argus_net FROM {delta}
             GROUP BY {columns}, argus_hash{identity} HAVING sum({sign}) < 0) AS n
     CROSS JOIN LATERAL (
        SELECT h.ctid AS argus_tid FROM {hist} AS h
         WHERE h.argus_hash = n.argus_hash AND CASE WHEN ROW({h_columns}) IS NOT DISTINCT FROM ROW({n_columns}) THEN true ELSE false END{same_identity}
         LIMIT -n.argus_net
    ) AS v
) AS victims
WHERE h.ctid = victims.argus_tid
