-- A claimed row is admitted unless its event time is further ahead of the server's
-- clock (now(): when the cycle started) than settings.max_clock_lead.
({t} IS NULL OR argus_lead IS NULL OR {t} <= now() + argus_lead)
