-- Signed path, part 1: for each row whose copies net to -k this cycle, delete k of its
-- copies from the history. A row is its values as they are, not as they compare: of
-- columns whose equal values can differ (numeric 2.00 and 2, float 0 and -0, interval,
-- jsonb: {identity}), the text tells a retracted 2.00 and an inserted 2 apart, and the
-- history ends with the 2.
DELETE FROM {hist} AS h USING (
    SELECT v.argus_tid FROM (
        SELECT h.ctid AS argus_tid, -n.argus_net AS argus_k,
               row_number() OVER (PARTITION BY h.argus_hash, {h_columns}{h_identity})
                   AS argus_rn
          FROM {hist} AS h
          JOIN (SELECT {columns}, argus_hash, sum({sign}) AS argus_net FROM {delta}
                 GROUP BY {columns}, argus_hash{identity} HAVING sum({sign}) < 0) AS n
            ON h.argus_hash = n.argus_hash AND CASE WHEN ROW({h_columns}) IS NOT DISTINCT FROM ROW({n_columns}) THEN true ELSE false END{same_identity}
    ) AS v WHERE v.argus_rn <= v.argus_k
) AS victims
WHERE h.ctid = victims.argus_tid
