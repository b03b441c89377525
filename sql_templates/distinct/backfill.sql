INSERT INTO {hist} ({columns}, argus_count, argus_hash)
SELECT {t1_columns}, count(*), {hash} FROM {parent} AS {t1} GROUP BY {t1_columns}
