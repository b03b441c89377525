-- After a locked claim that counted rows held back, they leave the inbox for the
-- quarantine before the children read the inbox in place (a statement of its own: the
-- claim's statistics count them, so that cycles holding nothing back scan each inbox
-- once, not twice).
-- {refused}: this stream held rows back, and the row is not admitted (and the inbox is
-- taken, for a stream no node reads).
{taken} AS (DELETE FROM {inbox} WHERE {refused} RETURNING *),
{held} AS (INSERT INTO argus_catalog.quarantine (stream, row, reason, run_id)
           SELECT {name}, to_jsonb(c), format('event time %s is more than max_clock_lead '
                  '(%s) ahead of the server''s clock (%s)', c.{t}, argus_lead, now()),
                  argus_run
             FROM {taken} AS c)
