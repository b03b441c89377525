-- A join whose rows expire by themselves (nodes/expiry): each row's expiry, indexed
-- (join/expiry_index): the cycle finds the rows that left by it. Its hash (every signed
-- history has one) is not indexed: no retraction looks a row up by it.
ALTER TABLE {hist} ADD COLUMN argus_expiry {type}
