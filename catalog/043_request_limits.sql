-- A role's requests: those waiting, counted at each new one (argus.request_row: at
-- most 100 wait), and when it was last served, which argus.requests.process takes
-- roles in turn by.
CREATE INDEX ON argus_catalog.requests (requested_by, request_id) WHERE status = 'pending';
CREATE INDEX ON argus_catalog.requests (requested_by, done_at) WHERE status <> 'pending';
