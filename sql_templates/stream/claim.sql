-- One stream's part of the cycle's single claim statement: every row committed before
-- the statement's snapshot leaves the inbox for the source node's delta (admitted) or
-- the quarantine (hold). Rows committed later are not visible to it and wait for the
-- next cycle.
{claimed} AS (DELETE FROM {inbox} RETURNING {columns}),
{moved} AS (INSERT INTO {delta} ({columns}, {sign}) SELECT {columns}, 1 FROM {claimed}
             WHERE {admitted})
