-- Append the claimed rows to the stream's history from where the claim left them: a
-- locked claim of a stream whose children read the inbox in place leaves them there
-- (its delta table is then empty), any other claim copied them to the delta table (the
-- inbox is then empty). Reading the tables, not argus_net.n<id>_claimed, spares every
-- row the view's union.
INSERT INTO {hist} ({columns}) SELECT {columns} FROM {source}
