-- After a locked claim that counted rows held back, they leave the inbox for the
-- quarantine before the children read the inbox in place (a statement of its own: the
-- claim's statistics count them, so that cycles holding nothing back scan each inbox
-- once, not twice). A row jsonb cannot hold is kept as its record's text (stream/hold).
-- {refused}: this stream held rows back, and the row is not admitted (and the inbox is
-- taken, for a stream no node reads).
{taken} AS (DELETE FROM {inbox} WHERE {refused} RETURNING *),
{held} AS (INSERT INTO argus_catalog.quarantine (stream, row, row_text, reason, run_id)
           SELECT {name}, j.row, CASE WHEN j.row IS NULL THEN {row}::text END,
                  format('event time %s is more than max_clock_lead (%s) ahead of the '
                         'server''s clock (%s)', c.{t}, argus_lead, now()), argus_run
             FROM {taken} AS c CROSS JOIN LATERAL (SELECT argus.try_jsonb(c) AS row) AS j)
