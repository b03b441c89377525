-- Signed path, part 1: for each row whose copies net to -k this cycle, delete k of its
-- copies from the history. A row is its values as they print (ROW(…)::text), not as
-- they compare: a retracted 2.00 and an inserted 2 (equal, and of one hash) are two
-- rows, and the history ends with the 2.
DELETE FROM {hist} AS h USING (
    SELECT v.argus_tid FROM (
        SELECT h.ctid AS argus_tid, -n.argus_net AS argus_k,
               row_number() OVER (PARTITION BY h.argus_hash, n.argus_text) AS argus_rn
          FROM {hist} AS h
          JOIN (SELECT argus_hash, ROW({columns})::text AS argus_text,
                       sum({sign}) AS argus_net
                  FROM {delta} GROUP BY argus_hash, ROW({columns})::text
                HAVING sum({sign}) < 0) AS n
            ON h.argus_hash = n.argus_hash AND ROW({h_columns})::text = n.argus_text
    ) AS v WHERE v.argus_rn <= v.argus_k
) AS victims
WHERE h.ctid = victims.argus_tid
