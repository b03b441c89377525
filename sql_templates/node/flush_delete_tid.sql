-- A row that vanished (an aggregate's group, a table's key): retracted, and no new row
-- for it, found by the ctid of the row its retraction names (which no update of this
-- flush moved): a TID scan of the ctids whose rows in the delta are all retractions
-- (one pass over the delta, where an anti-join of the delta with itself went
-- quadratic).
DELETE FROM {hist} AS h
 WHERE h.ctid = ANY(ARRAY(SELECT argus_ctid FROM {delta} WHERE argus_ctid IS NOT NULL
                           GROUP BY argus_ctid HAVING max({sign}) < 0))
