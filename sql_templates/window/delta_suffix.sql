-- A window node whose functions read only the rows ordered before their own (LAG, and
-- running aggregates and ROW_NUMBER: nodes.window.Suffix): in each partition the
-- parent's changes touched, only the rows ordered at or after the first change (its
-- frontier, argus_e) can change value. They are computed again over the parent's rows
-- from the frontier on, with the rows just before it that LAG reads (argus_ctx),
-- a running function continuing from its value at the last row before it (its carry,
-- argus_c<i>), and compared with the node's rows from the frontier on, as window/delta
-- compares whole partitions; the new rows of a partition that holds none from its
-- frontier on (new rows appended in order) are inserted without comparing. A
-- partition is computed again whole (argus_e NULL) when a
-- change has a NULL key or ORDER BY value, or when the last rows before its frontier
-- tie in their ORDER BY value (which of them was last is not known).
INSERT INTO {delta} ({columns}, argus_hash, {sign}, argus_ctid)
WITH argus_changed AS MATERIALIZED (
    SELECT {key_exprs}, min({order}) AS argus_e,
           bool_or({order} IS NULL OR NOT (ROW({keys}) IS NOT NULL)) AS argus_whole
      FROM {parent_delta} AS {t1} GROUP BY {key_positions}
), argus_keys AS MATERIALIZED (
    SELECT {c_keys}, CASE WHEN NOT (c.argus_whole OR b.argus_tied) THEN c.argus_e END AS argus_e{carries}
      FROM argus_changed AS c
      CROSS JOIN LATERAL (
          SELECT count(DISTINCT h.{o}) < count(*) AS argus_tied{carried}
            FROM (SELECT * FROM {hist} AS h WHERE {h_equal} AND h.{o} < c.argus_e
                   ORDER BY h.{o} DESC LIMIT {edge}) AS h) AS b
), argus_old AS MATERIALIZED (
    {touched_here}
), argus_rows AS (
    {rows}
), argus_held AS MATERIALIZED (  -- (a hash that collides only compares more rows)
    SELECT DISTINCT hash_record_extended(ROW({o_keys}), 0) AS argus_k FROM argus_old AS o
), argus_new AS MATERIALIZED (
    SELECT {final}, hash_record_extended(ROW({w_keys}), 0) IN (SELECT argus_k FROM argus_held)
                    AS argus_held
      FROM (SELECT {named}, {t1}.argus_ctx FROM argus_rows AS {t1}) AS w{with_carries}
     WHERE NOT w.argus_ctx
), argus_diff AS (
    SELECT {columns}, sum(argus_s) AS argus_n,
           array_agg(argus_ctid) FILTER (WHERE argus_s < 0) AS argus_tids
      FROM (SELECT {columns}, 1 AS argus_s, NULL::tid AS argus_ctid FROM argus_new
             WHERE argus_held
            UNION ALL
            SELECT {columns}, -1, argus_ctid FROM argus_old) AS u
     GROUP BY {columns}{identity} HAVING sum(argus_s) <> 0
)
SELECT {n_columns}, {n_hash}, 1::smallint, NULL::tid FROM argus_new AS n WHERE NOT n.argus_held
UNION ALL
SELECT {d_columns}, {d_hash}, sign(d.argus_n)::smallint,
       CASE WHEN d.argus_n < 0 THEN d.argus_tids[i] END
  FROM argus_diff AS d, generate_series(1, abs(d.argus_n)) AS i
