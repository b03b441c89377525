-- Whether the claim takes the {i}th inbox whole (locked, read in place, truncated):
-- when it grew by more than truncate_inbox_bytes since the last cycle's claim (a large
-- batch: reading it in place saves deleting and copying every row), or when the rows
-- claimed one by one have left its files (TOAST included) {times} times that
-- (settings.INBOX_TAKEN_WHOLE: dead rows that no VACUUM reclaimed). A TRUNCATE makes
-- a new file, which costs more than deleting a small batch row by row.
(argus_size[{i}] - coalesce(argus_size_last[{i}], 0) > argus_inbox_limit
 OR argus_size[{i}] > {times} * argus_inbox_limit)
