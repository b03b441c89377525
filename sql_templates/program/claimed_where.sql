-- A node reading a stream: a locked claim left the rows in the inbox (read in place),
-- any other claim moved them to the stream's delta table.
        IF argus_locked THEN
{locked}
        ELSE
{copied}
        END IF;
