-- Empty the inboxes whose claimed rows every node has now read in place (the cycle
-- still holds them exclusively), and stop reading inboxes as claimed rows.
    IF argus_locked THEN
{truncate_left}
        PERFORM set_config('argus.claim_locked', 'off', true);
    END IF;
