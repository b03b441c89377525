-- One term of the Rete rule for a join whose rows expire by themselves (nodes/expiry):
-- only its inputs' new rows count (a retraction there is a row leaving its window, and
-- each pair it was in expires here as well), and only pairs still inside the window.
INSERT INTO {delta} ({columns}, argus_hash, argus_expiry, {sign})
SELECT {s_columns}, {hash}, s.argus_expiry, 1 FROM (
    SELECT {named_exprs}, {expiry} AS argus_expiry
      FROM {left} AS {t1} JOIN {right} AS {t2} ON {condition}
     WHERE {new}{live}
) AS s
