INSERT INTO {aux} ({columns}, argus_hash, argus_ca, argus_cb)
SELECT {c_columns}, c.argus_hash, c.da, c.db FROM ({counts}) AS c;
INSERT INTO {hist} ({columns}{hash_column})
SELECT {a_columns}{a_hash} FROM {aux} AS a, generate_series(1, {m_aux})
 WHERE {m_aux} > 0
