-- One term of the Rete rule for a join whose rows expire by themselves (nodes/expiry):
-- only its inputs' new rows count (a retraction there is a row leaving its window, and
-- each pair it was in expires here as well), and only pairs still inside the window.
-- Its FROM joins t1 and t2 on the condition (nodes/join: _terms).
INSERT INTO {delta} ({columns}, argus_hash, argus_expiry, {sign})
SELECT {s_columns}, {hash}, s.argus_expiry, 1 FROM (
    SELECT {named_exprs}, {expiry} AS argus_expiry
      FROM {sources}
     WHERE {new}{live}
) AS s
