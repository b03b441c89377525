-- Empty the inboxes of a locked claim: every node has now read their rows in place (the
-- cycle still holds them exclusively).
    IF argus_locked THEN
        TRUNCATE {inboxes};
    END IF;
