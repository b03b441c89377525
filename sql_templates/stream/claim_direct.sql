-- One stream's part of the claim when no node reads the stream's claimed rows (no
-- child, no query's output): its rows wait in the inbox, written once, until the inbox
-- grows past settings.unread_inbox_bytes ({take}: a registration that reads the stream
-- makes the next cycle claim them all); then its admitted rows go straight to its
-- history, written once more instead of into its delta table and then from there.
{claimed} AS (DELETE FROM {inbox} WHERE {take} RETURNING {columns},
                                                         {admitted} AS argus_admitted),
{moved} AS (INSERT INTO {history} ({columns}) SELECT {columns} FROM {claimed}
             WHERE argus_admitted)
