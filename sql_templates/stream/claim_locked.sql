-- One stream's part of the claim when the cycle holds every inbox exclusively (no load
-- is writing): every row in the inbox is committed; the cycle reads the admitted ones
-- where they are and truncates the inbox after, which costs far less than deleting
-- rows one by one.
{claimed} AS (SELECT {columns} FROM {inbox} WHERE {admitted}),
{moved} AS (INSERT INTO {delta} ({columns}, {sign}) SELECT {columns}, 1 FROM {claimed})
