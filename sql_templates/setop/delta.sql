-- Output multiplicity m(a, b) per value before and after the deltas; emit the
-- difference as that many signed copies, in the form the counts keep the value in (its
-- first copy's): numeric 0.000 and 0, float -0 and 0, interval 1 day and 24 hours are
-- one value, and a copy retracted in another form than the history holds it in was
-- never deleted (found by a helper).
INSERT INTO {delta} ({columns}{hash_column}, {sign})
SELECT {x_columns}{x_hash}, CASE WHEN x.m_new > x.m_old THEN 1 ELSE -1 END
  FROM (SELECT y.*, {m_old} AS m_old, {m_new} AS m_new
          FROM (SELECT c.*, {kept}, coalesce(a.argus_ca, 0) AS oa, coalesce(a.argus_cb, 0) AS ob
                  FROM ({counts}) AS c
                  LEFT JOIN {aux} AS a ON a.argus_hash = c.argus_hash
                       AND CASE WHEN ROW({a_columns}) IS NOT DISTINCT FROM ROW({c_columns}) THEN true ELSE false END) AS y) AS x,
       generate_series(1, abs(x.m_new - x.m_old))
 WHERE x.m_new <> x.m_old
