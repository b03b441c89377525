-- A statement that writes the inbox wakes `argus run --follow` (LISTEN argus_rows)
-- when it commits: one notification per statement, a COPY's as one.
CREATE OR REPLACE TRIGGER argus_rows AFTER INSERT ON {inbox}
    FOR EACH STATEMENT EXECUTE FUNCTION argus.rows_arrived()
