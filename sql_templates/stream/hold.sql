-- The claimed rows that are not admitted go to the quarantine, whole and with the
-- reason, never lost: `argus quarantine release` returns them to the inbox. A row
-- jsonb cannot hold (a string past 256 MB) is kept as its record's text.
{held} AS (INSERT INTO argus_catalog.quarantine (stream, row, row_text, reason, run_id)
           SELECT {name}, j.row, CASE WHEN j.row IS NULL THEN {row}::text END,
                  format('event time %s is more than max_clock_lead (%s) ahead of the '
                         'server''s clock (%s)', c.{t}, argus_lead, now()), argus_run
             FROM {claimed} AS c
            CROSS JOIN LATERAL (SELECT argus.try_jsonb(c) - 'argus_admitted' AS row) AS j
            WHERE NOT c.argus_admitted)
