-- Insert-only path: the delta holds only +1 rows; append them to the history.
INSERT INTO {hist} ({columns}) SELECT {columns} FROM {delta}
