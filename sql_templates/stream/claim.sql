-- One stream's part of the cycle's single claim statement: every row committed before
-- the statement's snapshot leaves the inbox for the source node's delta (admitted) or
-- the quarantine (hold). Rows committed later are not visible to it and wait for the
-- next cycle. Whether a row is admitted is computed once (comparing a timestamp or date
-- with the server's clock converts it, per row and per comparison).
{claimed} AS (DELETE FROM {inbox} RETURNING {columns}, {admitted} AS argus_admitted),
{moved} AS (INSERT INTO {delta} ({columns}, {sign}) SELECT {columns}, 1 FROM {claimed}
             WHERE argus_admitted)
