INSERT INTO {aux} ({key}, argus_hash{counts})
SELECT d.*  FROM ({values}) AS d
