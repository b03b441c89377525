-- A window node's retracted rows, each by the ctid of the held row its delta names
-- (window/delta): a TID scan, no search for rows of equal value.
DELETE FROM {hist}
 WHERE ctid = ANY(ARRAY(SELECT argus_ctid FROM {delta} WHERE {sign} < 0))
