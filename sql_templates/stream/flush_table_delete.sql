-- A table's key that lost its row: the ctids whose rows in the delta are all
-- retractions (a TID scan; no probe of the key's index).
DELETE FROM {hist} AS h
 WHERE h.ctid = ANY(ARRAY(SELECT argus_ctid FROM {delta} WHERE argus_ctid IS NOT NULL
                           GROUP BY argus_ctid HAVING max({sign}) < 0))
