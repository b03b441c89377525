-- Signed path, part 2: insert k copies of each row whose copies net to +k (a row as it
-- is: flush_retract).
INSERT INTO {hist} ({columns}, argus_hash)
SELECT {n_columns}, n.argus_hash
  FROM (SELECT {columns}, argus_hash, sum({sign}) AS argus_net FROM {delta}
         GROUP BY {columns}, argus_hash{identity} HAVING sum({sign}) > 0) AS n,
       generate_series(1, n.argus_net)
