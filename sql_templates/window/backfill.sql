INSERT INTO {hist} ({columns}, argus_hash)
SELECT {s_columns}, {s_hash}
  FROM (SELECT * FROM (SELECT {named} FROM {parent} AS {t1}{group_by}) AS argus_w
         WHERE {kept}) AS s
