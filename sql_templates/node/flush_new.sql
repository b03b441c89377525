-- The rows that came in, when all the delta's others are rows that left their window and
-- have left the history already (node/flush_expired; nodes/expiry). {columns}: the
-- history's, its hidden ones included.
INSERT INTO {hist} ({columns}) SELECT {columns} FROM {delta} WHERE {sign} > 0
