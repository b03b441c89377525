-- Signed path, part 2: insert k copies of each row whose copies net to +k (a row as it
-- prints: flush_retract; grouped by its columns too, to have them).
INSERT INTO {hist} ({columns}, argus_hash)
SELECT {n_columns}, n.argus_hash
  FROM (SELECT {columns}, argus_hash, sum({sign}) AS argus_net FROM {delta}
         GROUP BY {columns}, argus_hash, ROW({columns})::text
        HAVING sum({sign}) > 0) AS n,
       generate_series(1, n.argus_net)
