-- What a stream's children read as the rows a cycle claimed. A claim that holds every
-- inbox exclusively (argus.claim_locked, set for the cycle) leaves the rows in the
-- inbox, saving a copy of each; any other claim moves them to the delta table.
CREATE OR REPLACE VIEW {view} AS
SELECT {columns}, 1::smallint AS {sign} FROM {inbox}
 WHERE current_setting('argus.claim_locked', true) = 'on'
UNION ALL
SELECT {columns}, {sign} FROM {delta}
