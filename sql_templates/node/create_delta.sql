-- Every node's delta: its history's columns plus the sign (+1 insert, -1 retraction).
CREATE TABLE {delta} (LIKE {hist}, {sign} smallint NOT NULL)
