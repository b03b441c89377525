-- Forget the previous cycle's changes. DELETE, not TRUNCATE: readers of the changes
-- views are never blocked by a running cycle.
DELETE FROM {delta}
