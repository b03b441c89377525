-- Every node's delta: its history's columns plus the sign (+1 insert, -1 retraction).
-- UNLOGGED: a delta is rebuilt by every cycle, so it need not survive a crash (the
-- changes views are empty after crash recovery until the next cycle).
CREATE UNLOGGED TABLE {delta} (LIKE {hist}, {sign} smallint NOT NULL)
