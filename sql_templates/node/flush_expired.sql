-- The rows that left their window (the cycle's only retractions of a window or of a join
-- whose rows expire by themselves: nodes/expiry) leave the history by an index of their
-- bound.
DELETE FROM {hist} AS {t1} WHERE {expired}
