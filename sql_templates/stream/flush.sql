-- Append the claimed rows to the stream's history from where the claim left them: the
-- inbox for a locked claim (truncated at the end of the cycle), else the stream's delta
-- table.
INSERT INTO {hist} ({columns}) SELECT {columns} FROM {source}
