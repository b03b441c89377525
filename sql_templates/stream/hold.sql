-- The claimed rows that are not admitted go to the quarantine, whole and with the
-- reason, never lost: `argus quarantine release` returns them to the inbox.
{held} AS (INSERT INTO argus_catalog.quarantine (stream, row, reason, run_id)
           SELECT {name}, to_jsonb(c) - 'argus_admitted', format('event time %s is more '
                  'than max_clock_lead (%s) ahead of the server''s clock (%s)', c.{t},
                  argus_lead, now()), argus_run
             FROM {claimed} AS c WHERE NOT c.argus_admitted)
