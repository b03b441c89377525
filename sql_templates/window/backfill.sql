INSERT INTO {hist} ({columns}, argus_hash)
SELECT {s_columns}, {s_hash} FROM (SELECT {named} FROM {parent} AS {t1}) AS s
