INSERT INTO {aux} ({key}, argus_hash, argus_count)
SELECT d.*  FROM ({values}) AS d
