-- A locked claim leaves its rows in the inbox for the children to read: the rows that
-- are not admitted leave it for the quarantine first (the same statement's claim does
-- not see them go, and skips them itself).
-- {refused}: NOT admitted (and taken, for a stream no node reads).
{taken} AS (DELETE FROM {inbox} WHERE {refused} RETURNING *),
{held} AS (INSERT INTO argus_catalog.quarantine (stream, row, reason, run_id)
           SELECT {name}, to_jsonb(c), format('event time %s is more than max_clock_lead '
                  '(%s) ahead of the server''s clock (%s)', c.{t}, argus_lead, now()),
                  argus_run
             FROM {taken} AS c)
