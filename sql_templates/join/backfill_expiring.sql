-- A new join whose rows expire by themselves (nodes/expiry) starts from the join of its
-- parents' histories, each pair with its expiry.
INSERT INTO {hist} ({columns}, argus_hash, argus_expiry)
SELECT {s_columns}, {hash}, s.argus_expiry FROM (
    SELECT {named_exprs}, {expiry} AS argus_expiry
      FROM {left} AS {t1} JOIN {right} AS {t2} ON {condition}
     WHERE {live}
) AS s
