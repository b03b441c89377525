-- One stream's part of the claim when no node reads the stream's claimed rows (no
-- child, no query's output): its admitted rows go straight to its history, written once
-- instead of into its delta table and then from there.
{claimed} AS (DELETE FROM {inbox} RETURNING {columns}),
{moved} AS (INSERT INTO {history} ({columns}) SELECT {columns} FROM {claimed}
             WHERE {admitted})
