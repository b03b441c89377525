-- Empty the inboxes of a locked claim: every node has now read their rows in place (the
-- cycle still holds them exclusively). An unread stream's inbox is emptied only if the
-- claim took it.
    IF argus_locked THEN
{truncate}
    END IF;
