-- A claimed row is admitted unless its event time is further ahead of the server's
-- clock (now(): when the cycle started) than settings.max_clock_lead: argus_horizon,
-- computed once per cycle (sql_templates/program/cycle_program.sql).
({t} IS NULL OR argus_horizon IS NULL OR {t} <= argus_horizon)
